package catalog

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// A publish that takes longer than go-sdk's 10 ms debounce (a loaded
// machine, or many hosted tools) still sends each session one
// notifications/tools/list_changed, after the whole change: go-sdk's
// notification due in the middle of it waits for its end, and the one due
// after it is not sent again. Without that, a caller was sent one in the
// middle (and listed half a catalog), then another.
func TestOneListChangedForASlowPublish(t *testing.T) {
	srv := &registry.Server{Name: "x", Command: "/nonexistent/server"}
	reg := &registry.Registry{Servers: map[string]*registry.Server{"x": srv}}
	c := newAggregate(t, reg, nil)
	server := mcp.NewServer(&mcp.Implementation{Name: "test"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	// What the session is sent, below the catalog's middleware (added
	// first: innermost), and what go-sdk tries to send, above it (last).
	var sent atomic.Int32
	server.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == toolListChanged {
				sent.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	c.Attach(server)
	tried, triedDone := make(chan struct{}, 8), make(chan struct{}, 8)
	server.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != toolListChanged {
				return next(ctx, method, req)
			}
			tried <- struct{}{}
			defer func() { triedDone <- struct{}{} }()
			return next(ctx, method, req)
		}
	})
	c.Settle(t.Context()) // the first fill (which fails)

	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal(what)
		}
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	changed, acked := make(chan struct{}, 8), make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "client"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	// A 2026-07-28 client (go-sdk's default) is sent list_changed once the
	// server has acknowledged its subscriptions/listen, which it sends
	// after Connect returns.
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acked <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	cs, err := client.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })

	if cs.InitializeResult().ProtocolVersion >= "2026-07-28" {
		wait(acked, "the client's subscriptions/listen was never acknowledged")
	}

	// The publish stops after its first tool until go-sdk's notification
	// of it is on its way: the rest of the tools change after it.
	var first sync.Once
	afterChange = func() {
		first.Do(func() {
			select {
			case <-tried:
			case <-time.After(10 * time.Second):
				t.Error("go-sdk never tried to send list_changed")
			}
		})
	}
	t.Cleanup(func() { afterChange = nil })
	var hosted []*mcp.Tool
	for i := range 3 {
		hosted = append(hosted, &mcp.Tool{Name: fmt.Sprintf("t%d", i), InputSchema: map[string]any{"type": "object"}})
	}
	c.Heard(srv, hosted)

	// go-sdk tries twice: once for the first tool (during the publish),
	// once for the others (after it).
	wait(triedDone, "go-sdk's first list_changed never ended")
	wait(tried, "go-sdk never tried to send a list_changed for the rest of the publish")
	wait(triedDone, "go-sdk's second list_changed never ended")
	if n := sent.Load(); n != 1 {
		t.Errorf("the session was sent %d notifications/tools/list_changed for one publish, want 1", n)
	}
	// The list read after it is the whole of it.
	wait(changed, "the client was sent no list_changed")
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != len(own)+len(hosted) {
		t.Errorf("listed %d tools after the list_changed, want %d", len(res.Tools), len(own)+len(hosted))
	}
}
