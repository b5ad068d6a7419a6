package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// callConcurrently makes n calls of demo's echo at once and returns the
// failures and the slowest call.
func callConcurrently(t *testing.T, cs *mcp.ClientSession, n int) (failures []string, slowest time.Duration) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			msg := fmt.Sprintf("call %d", i)
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
				Arguments: map[string]any{"server": "demo", "name": "echo", "arguments": map[string]any{"message": msg}}})
			d := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			slowest = max(slowest, d)
			switch {
			case err != nil:
				failures = append(failures, err.Error())
			case res.IsError:
				failures = append(failures, fmt.Sprint(res.StructuredContent))
			case res.Content[0].(*mcp.TextContent).Text != "Echo: "+msg:
				failures = append(failures, "wrong answer: "+res.Content[0].(*mcp.TextContent).Text)
			}
		})
	}
	wg.Wait()
	return failures, slowest
}

// 100 concurrent call-tool requests through one stdio session and through
// HTTP: every one succeeds (the 32 process slots queue the rest).
func TestLoad100Concurrent(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		cs := connect(t, writeRegistry(t, nil), "COLIBRI_MCP_EXTERNAL_CALL=1")
		if failures, _ := callConcurrently(t, cs, 100); len(failures) > 0 {
			t.Errorf("%d of 100 failed; first: %s", len(failures), failures[0])
		}
	})
	t.Run("http", func(t *testing.T) {
		c := startHTTP(t, "127.0.0.1:0")
		cs, err := connectHTTP(t, c.url, "")
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if failures, _ := callConcurrently(t, cs, 100); len(failures) > 0 {
			t.Errorf("%d of 100 failed; first: %s", len(failures), failures[0])
		}
	})
}

// One server hanging never delays calls to another: with hung calls in
// flight, calls to the demo server stay fast.
func TestIsolationFromAHungServer(t *testing.T) {
	t.Parallel() // a long test of its own process: it runs beside the others (docs/testing.md)
	hung := fakeServer("hang-call", "")
	hung["call_timeout_ms"] = 20000
	reg := writeRegistry(t, registryDoc{"hung": hung})
	s := start(t, reg, nil)
	cs := s.cs

	// Baseline: the same calls with nothing hung.
	_, baseline := callConcurrently(t, cs, 10)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range 4 {
		go cs.CallTool(ctx, &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
			Arguments: map[string]any{"server": "hung", "name": "any"}})
	}
	for deadline := time.Now().Add(10 * time.Second); len(proctable.Children(s.pid)) < 4; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hung servers never started")
		}
	}
	failures, slowest := callConcurrently(t, cs, 10)
	if len(failures) > 0 {
		t.Fatalf("calls to a healthy server failed next to a hung one: %v", failures)
	}
	// Generous: this checks that nothing waits on the hung server, not speed.
	if bound := baseline*3 + time.Second; slowest > bound {
		t.Errorf("with a hung server next door the slowest healthy call took %s (baseline %s)", slowest, baseline)
	}
}
