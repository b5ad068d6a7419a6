package main

// colibri's stdio face in-process: run(...) serving over pipes, so that the
// race detector sees the command wiring, the tools and the host together.

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveInProcess runs `colibri-mcp serve ARGS…` in this process and connects
// a client to it. The returned channel yields run's error once it returns.
func serveInProcess(t *testing.T, ctx context.Context, environ []string, args ...string) (*mcp.ClientSession, <-chan error, *lockedWriter) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &lockedWriter{w: &strings.Builder{}}
	pin := pinEnv(t) // first: environ may name its own
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"colibri-mcp", "serve"}, args...), inR, outW, stderr, append([]string{pin}, environ...))
		outW.Close()
		done <- err
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "in-process", Version: "1"}, nil).
		Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connecting: %v\n%s", err, stderr)
	}
	return cs, done, stderr
}

func waitRun(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return")
		return nil
	}
}

func TestRunServesStdioInProcess(t *testing.T) {
	reg := writeRegistry(t, registryDoc{"fake": fakeServer("ok", "")})
	environ := []string{"PATH=/usr/bin:/bin", "E2E_SECRET=in-process-secret"}
	cs, done, stderr := serveInProcess(t, t.Context(), environ, "--external-config", reg, "--external-call", "--log-level", "debug")
	for _, server := range []string{"fake", "demo"} {
		res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": server, "name": "echo", "arguments": map[string]any{"message": "in"}})
		if res.IsError || textOf(res) != "Echo: in" {
			t.Fatalf("%s: %v", server, res.Content)
		}
	}
	cs.Close() // stdin EOF: colibri leaves, with nothing to report
	if err := waitRun(t, done); err != nil {
		t.Errorf("run after stdin EOF: %v", err)
	}
	if strings.Contains(stderr.String(), "in-process-secret") {
		t.Error("a secret value appeared in colibri's log")
	}
}

// The signal context ending (SIGTERM in main) ends serve with exit 0.
func TestRunStopsOnSignalInProcess(t *testing.T) {
	reg := writeRegistry(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cs, done, _ := serveInProcess(t, ctx, []string{"PATH=/usr/bin:/bin", "E2E_SECRET=x"}, "--external-config", reg)
	defer cs.Close()
	if res := call(t, cs, "colibri_external_mcp_servers", nil); res.IsError {
		t.Fatal(res.Content)
	}
	cancel()
	if err := waitRun(t, done); err != nil {
		t.Errorf("run after the signal: %v", err)
	}
}
