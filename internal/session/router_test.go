package session

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// elicit forwards one elicitation through r, as the hosted session's
// handler does.
func elicit(r *router, ctx context.Context) (*mcp.ElicitResult, error) {
	return forward(r, ctx, func(c *Caller) bool { return c.Elicit != nil },
		func(ctx context.Context, c *Caller) (*mcp.ElicitResult, error) {
			return c.Elicit(ctx, &mcp.ElicitParams{})
		})
}

// wantRefused asserts err is the JSON-RPC error the hosted server gets for
// a request colibri refuses: code -32603 (never 0), saying why.
func wantRefused(t *testing.T, err error, says string) {
	t.Helper()
	var e *jsonrpc.Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeInternalError || !strings.Contains(e.Message, says) {
		t.Errorf("err = %v; want a JSON-RPC error -32603 saying %q", err, says)
	}
}

// A server-to-client request reaches the caller of the one operation in
// flight, and is refused while several are in flight, a listing beside a
// call included (a listing offers nothing: its request must not reach
// the call's caller), or while none is.
func TestForwardRefusesWhenAmbiguous(t *testing.T) {
	var asked atomic.Int32
	call := &Caller{Elicit: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept"}, nil
	}}
	for _, tc := range []struct {
		name    string
		routes  []*Caller
		refused string // "" when the call's caller answers
	}{
		{"one call", []*Caller{call}, ""},
		{"two calls", []*Caller{call, call}, "cannot tell which one"},
		{"a listing beside a call", []*Caller{call.Listing(), call}, "cannot tell which one"},
		{"a listing alone", []*Caller{call.Listing()}, "no call that may answer"},
		{"nothing", nil, "no call that may answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRouter("fake", nil, nil)
			for _, c := range tc.routes {
				defer r.begin(t.Context(), c, "", func() {})()
			}
			before := asked.Load()
			res, err := elicit(r, t.Context())
			switch {
			case tc.refused == "":
				if err != nil || res.Action != "accept" || asked.Load() != before+1 {
					t.Errorf("res %v, err %v, asked %d times; want the call's caller's answer", res, err, asked.Load()-before)
				}
			default:
				wantRefused(t, err, tc.refused)
				if asked.Load() != before {
					t.Errorf("the caller was asked")
				}
			}
		})
	}
}

// At most maxForwarded requests of a server wait for one call's caller at
// once: the next is refused at once, and the slots free as they are
// answered. A request still waiting when its call ends ends with it.
func TestForwardBoundsRequestsInFlight(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	var asked atomic.Int32
	caller := &Caller{Elicit: func(ctx context.Context, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		if asked.Add(1) > maxForwarded {
			return &mcp.ElicitResult{Action: "accept"}, nil // past the bound: must never be reached
		}
		arrived <- struct{}{}
		select {
		case <-release:
			return &mcp.ElicitResult{Action: "accept"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	r := newRouter("fake", nil, nil)
	ctx, cancel := context.WithCancel(t.Context())
	end := r.begin(ctx, caller, "", func() {})
	defer end()
	var wg sync.WaitGroup
	for range maxForwarded {
		wg.Go(func() {
			if _, err := elicit(r, t.Context()); err != nil {
				t.Errorf("a request within the bound: %v", err)
			}
		})
	}
	for range maxForwarded {
		<-arrived
	}
	_, err := elicit(r, t.Context())
	wantRefused(t, err, "more than 4 requests of this server are already waiting")
	close(release)
	wg.Wait()
	if n := asked.Load(); n != maxForwarded {
		t.Fatalf("the caller was asked %d times, want %d", n, maxForwarded)
	}
	// The slots are free again; a request waiting when its call ends ends.
	errc := make(chan error, 1)
	release = make(chan struct{})
	asked.Store(0)
	go func() {
		_, err := elicit(r, t.Context())
		errc <- err
	}()
	<-arrived
	cancel()
	if err := <-errc; err == nil {
		t.Errorf("a request still waiting when its call ended was answered")
	}
}

// Progress reaches the call whose token it carries, and is dropped for a
// token of no call in flight.
func TestProgressByToken(t *testing.T) {
	r := newRouter("fake", nil, nil)
	var got [2]atomic.Int32
	var kicked [2]atomic.Int32
	for i, token := range []string{"colibri-1", "colibri-2"} {
		c := &Caller{Progress: func(context.Context, *mcp.ProgressNotificationParams) { got[i].Add(1) }}
		defer r.begin(t.Context(), c, token, func() { kicked[i].Add(1) })()
	}
	r.progress([]byte(`{"progressToken":"colibri-2","progress":1}`))
	r.progress([]byte(`{"progressToken":"colibri-9","progress":1}`))
	// The second route's end drains its queue; read after the defers.
	t.Cleanup(func() {
		if got[0].Load() != 0 || got[1].Load() != 1 || kicked[0].Load() != 0 || kicked[1].Load() != 1 {
			t.Errorf("progress delivered %d/%d, timeouts extended %d/%d; want only the second call's, once",
				got[0].Load(), got[1].Load(), kicked[0].Load(), kicked[1].Load())
		}
	})
}
