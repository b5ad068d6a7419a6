package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The serve --only hop in this process, for a CPU profile of what colibri
// adds to a warm tools/call (docs/benchmarks.md, "The serve --only hop"):
// "only" is `serve --only demo` (run(...) over pipes, the demo server
// persistent), "direct" the same client on the demo server itself. The demo
// server is a process of its own: its share is not in the profile. Run with
//
//	go test -run '^$' -bench BenchmarkOnlyHop -benchtime 3000x -cpuprofile cpu.out ./cmd/colibri-mcp
//
// make bench's only row measures the same hop as processes of their own.
func BenchmarkOnlyHop(b *testing.B) {
	args := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}
	b.Run("only", func(b *testing.B) {
		cs := onlyInProcess(b)
		loopOnly(b, func() (*mcp.CallToolResult, error) { return cs.CallTool(b.Context(), args) })
	})
	b.Run("direct", func(b *testing.B) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
			Connect(b.Context(), &mcp.CommandTransport{Command: exec.Command(demoBin)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		loopOnly(b, func() (*mcp.CallToolResult, error) { return cs.CallTool(b.Context(), args) })
	})
}

// onlyInProcess runs `colibri-mcp serve --only demo` in this process, the
// demo server persistent, and connects a client to it.
func onlyInProcess(b *testing.B) *mcp.ClientSession {
	dir := b.TempDir()
	reg := filepath.Join(dir, "external-mcp.json")
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{"demo": map[string]any{"command": demoBin, "lifecycle": "persistent"}}})
	if err := os.WriteFile(reg, doc, 0o644); err != nil {
		b.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &lockedWriter{w: &strings.Builder{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx, []string{"colibri-mcp", "serve", "--only", "demo", "--external-config", reg, "--external-call", "--log-level", "warn"},
			inR, outW, stderr, []string{"PATH=/usr/bin:/bin", "COLIBRI_MCP_PIN_FILE=" + dir + "/pins.json"})
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(b.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatalf("connecting: %v\n%s", err, stderr)
	}
	b.Cleanup(func() { cs.Close(); cancel(); <-done })
	return cs
}

func loopOnly(b *testing.B, call func() (*mcp.CallToolResult, error)) {
	for range 20 { // warm: the process, the list, the compiled schema
		if res, err := call(); err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := call()
		if err != nil || res.IsError {
			b.Fatalf("%v %v", err, res)
		}
	}
}
