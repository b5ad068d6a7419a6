package tools_test

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/tools"
)

// The cost of a small call over Streamable HTTP, in this process, for a
// CPU and allocation profile of what colibri adds to go-sdk's own cost:
// "floor" is a bare go-sdk Streamable HTTP server whose one tool returns a
// constant, driven by the same client; "servers" is colibri's own servers
// tool (no hosted server); "hosted" is a warm call to a fake server (a
// process: its share is not in this profile). Run with
//
//	go test -run '^$' -bench BenchmarkCost -benchtime 3000x -cpuprofile cpu.out -memprofile mem.out ./tools
//
// make bench measures the same subjects as processes of their own.

func BenchmarkCost(b *testing.B) {
	b.Run("floor", func(b *testing.B) {
		s := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "constant"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
		go hs.Serve(ln)
		b.Cleanup(func() { hs.Close() })
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
			Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + ln.Addr().String(), HTTPClient: &http.Client{}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		loopCalls(b, func() (*mcp.CallToolResult, error) {
			return cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "constant", Arguments: map[string]any{}})
		})
	})
	b.Run("servers", func(b *testing.B) {
		cs := colibriOverHTTP(b)
		loopCalls(b, func() (*mcp.CallToolResult, error) {
			return cs.CallTool(b.Context(), &mcp.CallToolParams{Name: tools.ServersTool, Arguments: map[string]any{}})
		})
	})
	b.Run("hosted", func(b *testing.B) {
		cs := colibriOverHTTP(b)
		args := map[string]any{"server": "warm", "name": "echo", "arguments": map[string]any{"message": "hi"}}
		loopCalls(b, func() (*mcp.CallToolResult, error) {
			return cs.CallTool(b.Context(), &mcp.CallToolParams{Name: tools.CallToolTool, Arguments: args})
		})
	})
}

func loopCalls(b *testing.B, call func() (*mcp.CallToolResult, error)) {
	if _, err := call(); err != nil { // warm: the process, the list, the compiled schema
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := call()
		if err != nil || res.IsError {
			b.Fatalf("%v %v", err, res)
		}
	}
}
