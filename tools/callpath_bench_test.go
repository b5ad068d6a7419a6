package tools_test

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/httpserve"
	"github.com/colibri-mcp/colibri-mcp/internal/stdioserve"
	"github.com/colibri-mcp/colibri-mcp/metrics"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// The path of a hosted call through colibri's packages, in this process:
// a go-sdk client → colibri's stdio face (stdioserve over pipes; or its
// Streamable HTTP face on a loopback port, "colibri-http") → tools →
// host → a warm fake server (a process: its share is not in this process's
// profile) and back. "direct" is the same client calling the same fake
// server itself: the difference is colibri's. Run with
//
//	go test -run '^$' -bench BenchmarkCallPath -benchtime 20x -cpuprofile cpu.out ./tools
//
// These do not run in `go test` without -bench.

func BenchmarkCallPath8MiB(b *testing.B) { benchCallPath(b, 8<<20) }

func BenchmarkCallPathSmall(b *testing.B) { benchCallPath(b, 2) }

func benchCallPath(b *testing.B, size int) {
	msg := strings.Repeat("0123456789abcdef", size/16+1)[:size]
	b.Run("colibri", func(b *testing.B) {
		cs := colibriOverPipes(b, false)
		args := map[string]any{"server": "warm", "name": "echo", "arguments": map[string]any{"message": msg}}
		runCalls(b, size, func() (*mcp.CallToolResult, error) {
			return cs.CallTool(b.Context(), &mcp.CallToolParams{Name: tools.CallToolTool, Arguments: args})
		})
	})
	b.Run("colibri-metered", func(b *testing.B) {
		// As a serve with --metrics-addr or an audit log runs: each call
		// is recorded, which reads its server and tool from its input.
		cs := colibriOverPipes(b, true)
		args := map[string]any{"server": "warm", "name": "echo", "arguments": map[string]any{"message": msg}}
		runCalls(b, size, func() (*mcp.CallToolResult, error) {
			return cs.CallTool(b.Context(), &mcp.CallToolParams{Name: tools.CallToolTool, Arguments: args})
		})
	})
	b.Run("colibri-http", func(b *testing.B) {
		cs := colibriOverHTTP(b)
		args := map[string]any{"server": "warm", "name": "echo", "arguments": map[string]any{"message": msg}}
		runCalls(b, size, func() (*mcp.CallToolResult, error) {
			return cs.CallTool(b.Context(), &mcp.CallToolParams{Name: tools.CallToolTool, Arguments: args})
		})
	})
	b.Run("direct", func(b *testing.B) {
		cmd := exec.Command(fakeBin, "ok")
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
			Connect(b.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		args := map[string]any{"message": msg}
		runCalls(b, size, func() (*mcp.CallToolResult, error) {
			return cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "echo", Arguments: args})
		})
	})
}

func runCalls(b *testing.B, size int, call func() (*mcp.CallToolResult, error)) {
	check := func() {
		res, err := call()
		if err != nil {
			b.Fatal(err)
		}
		if res.IsError || len(res.Content) != 1 || len(res.Content[0].(*mcp.TextContent).Text) != size+len("Echo: ") {
			b.Fatalf("unexpected result: isError %v, %d contents", res.IsError, len(res.Content))
		}
	}
	check() // warm: the process, the list, the compiled schema
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		check()
	}
}

// warmService is the three tools over one persistent fake server "warm",
// with a bulk table shared by the tools and the host, as colibri-mcp serve
// has them (metered: with metrics, as --metrics-addr has it); stop ends them.
func warmService(metered bool) (svc *tools.Service, table *bulk.Table, stop func()) {
	reg := &registry.Registry{Servers: map[string]*registry.Server{
		"warm": {Name: "warm", Command: fakeBin, Args: []string{"ok"}, Lifecycle: registry.Persistent},
	}}
	table = bulk.New(bulk.DefaultMin)
	h := host.New(host.Options{Timeout: 30 * time.Second, TerminateGrace: 200 * time.Millisecond, MaxResultBytes: 64 << 20, Bulk: table})
	opts := tools.Options{
		Bulk:         table,
		Registry:     func() (*registry.Registry, error) { return reg, nil },
		ConfigPath:   "in-memory",
		Host:         h,
		ExternalCall: true,
	}
	if metered {
		opts.Metrics = metrics.New(metrics.Options{Version: "bench"})
	}
	svc = tools.New(opts)
	return svc, table, func() { svc.Close(); h.Close() }
}

// colibriOverHTTP is colibriOverPipes through the Streamable HTTP face, on
// a loopback port.
func colibriOverHTTP(b *testing.B) *mcp.ClientSession {
	svc, table, stop := warmService(false)
	srv, err := httpserve.New(httpserve.Options{Addr: "127.0.0.1:0", Server: svc.NewServer("bench"), Bulk: table, MaxBodyBytes: 65 << 20})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL(), HTTPClient: &http.Client{}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cs.Close()
		cancel()
		<-served
		stop()
	})
	return cs
}

// colibriOverPipes serves the three tools through colibri's stdio face
// over pipes, with one persistent fake server "warm", and returns a
// go-sdk client connected to it.
func colibriOverPipes(b *testing.B, metered bool) *mcp.ClientSession {
	svc, table, stop := warmService(metered)
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	ss, err := svc.NewServer("bench").Connect(ctx, &stdioserve.Transport{Reader: toServer, Writer: fromServer, MaxMessageBytes: 64 << 20, Bulk: table}, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: toClient, Writer: fromClient}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cs.Close()
		ss.Close()
		cancel()
		stop()
	})
	return cs
}
