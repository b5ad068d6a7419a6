package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// newAggregate is a catalog in aggregate mode over reg, whose servers never
// list (a fill fails at once), which offers everything and pins nothing:
// what a test hears is what it hands Heard.
func newAggregate(t *testing.T, reg *registry.Registry, log *slog.Logger) *Catalog {
	t.Helper()
	answer := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	c := New(Options{
		Aggregate:    true,
		RegistryPoll: -1,
		ListWait:     5 * time.Second,
		Logger:       log,
		Registry:     func() (*registry.Registry, error) { return reg, nil },
		Own:          func(string) mcp.ToolHandler { return answer },
		Hosted:       answer,
		List:         func(context.Context, *registry.Server) error { return errors.New("no such server") },
		Screen: func(_ context.Context, _ *registry.Registry, _ *registry.Server, tools []*mcp.Tool) ([]*mcp.Tool, []pin.Change, error) {
			return tools, nil, nil
		},
		PinCheck:      func(*registry.Registry, *registry.Server, []*mcp.Tool) {},
		PinGeneration: func() uint64 { return 0 },
		Allowed:       func(context.Context, *registry.Registry, *registry.Server, *mcp.Tool) bool { return true },
	})
	t.Cleanup(c.Close)
	return c
}

// A hosted tool that passes addable's checks and that go-sdk's AddTool
// still refuses (it panics) is left out and logged: never fatal, and the
// others are offered.
func TestAddRecovers(t *testing.T) {
	bad := &mcp.Tool{Name: "bad", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"x": map[string]any{"type": "object", "x-mcp-header": "X-Thing"}}}}
	good := &mcp.Tool{Name: "good", InputSchema: map[string]any{"type": "object"}}
	if err := addable(bad); err != nil {
		t.Fatalf("addable(bad) = %v: only go-sdk itself knows this one", err)
	}

	srv := &registry.Server{Name: "x", Command: "/nonexistent/server"}
	reg := &registry.Registry{Servers: map[string]*registry.Server{"x": srv}}
	logs := &syncbuf.Buffer{}
	c := newAggregate(t, reg, slog.New(slog.NewTextHandler(logs, nil)))
	server := mcp.NewServer(&mcp.Implementation{Name: "test"}, nil)
	c.Attach(server)
	c.Settle(t.Context()) // the first fill (which fails): lists heard meanwhile wait for it

	c.Heard(srv, []*mcp.Tool{bad, good})
	c.mu.Lock()
	_, badOffered := c.offered["x__bad"]
	_, goodOffered := c.offered["x__good"]
	_, badRouted := c.routes["x__bad"]
	c.mu.Unlock()
	if badOffered || badRouted || !goodOffered {
		t.Errorf("offered: bad %v (routed %v), good %v; want only good", badOffered, badRouted, goodOffered)
	}
	if !strings.Contains(logs.String(), "tool=bad") || !strings.Contains(logs.String(), "go-sdk refused it") {
		t.Errorf("the refusal was not logged:\n%s", logs)
	}
}

// A tools/list page of exposed tools is filtered by an index, not by a
// search of the hosted list for each tool: with 20,000 hosted tools, the
// pages of one listing take milliseconds (10 to 70 with -race), where a
// search made it seconds. The best of three runs is timed: a loaded
// machine's pauses fall in one run, not in all three.
func TestVisibleToScales(t *testing.T) {
	took := filterTime(t, 20_000)
	t.Logf("filtering one listing of 20,000 exposed tools took %s (the best of three)", took)
	if took > time.Second {
		t.Errorf("filtering one listing of 20,000 exposed tools took %s", took)
	}
}

// filterTime is the best of three times one listing of n exposed tools,
// in pages of n/20, is filtered, with n hosted tools.
func filterTime(t *testing.T, n int) time.Duration {
	srv := &registry.Server{Name: "big", Command: "/nonexistent/server"}
	reg := &registry.Registry{Servers: map[string]*registry.Server{"big": srv}}
	c := newAggregate(t, reg, nil)
	c.Refresh()
	var hosted []*mcp.Tool
	for i := range n {
		hosted = append(hosted, &mcp.Tool{Name: fmt.Sprintf("t%05d", i), InputSchema: map[string]any{"type": "object"}})
	}
	c.Heard(srv, hosted)
	var page []*mcp.Tool
	for i := range n {
		page = append(page, &mcp.Tool{Name: fmt.Sprintf("big__t%05d", i)})
	}
	best := time.Duration(math.MaxInt64)
	for range 3 {
		begun := time.Now()
		kept := 0
		for p := range 20 {
			res := &mcp.ListToolsResult{Tools: slices.Clone(page[p*n/20 : (p+1)*n/20])}
			c.VisibleTo(t.Context(), res)
			kept += len(res.Tools)
		}
		best = min(best, time.Since(begun))
		if kept != n {
			t.Fatalf("%d of %d exposed tools kept", kept, n)
		}
	}
	return best
}
