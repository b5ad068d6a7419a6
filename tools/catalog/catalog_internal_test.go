package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
// pages of one listing take milliseconds (a search made it seconds).
func TestVisibleToScales(t *testing.T) {
	srv := &registry.Server{Name: "big", Command: "/nonexistent/server"}
	reg := &registry.Registry{Servers: map[string]*registry.Server{"big": srv}}
	c := newAggregate(t, reg, nil)
	c.Refresh()
	var hosted []*mcp.Tool
	for i := range 20_000 {
		hosted = append(hosted, &mcp.Tool{Name: fmt.Sprintf("t%05d", i), InputSchema: map[string]any{"type": "object"}})
	}
	c.Heard(srv, hosted)

	var page []*mcp.Tool
	for i := range 20_000 {
		page = append(page, &mcp.Tool{Name: fmt.Sprintf("big__t%05d", i)})
	}
	begun := time.Now()
	kept := 0
	for p := range 20 {
		res := &mcp.ListToolsResult{Tools: page[p*1000 : (p+1)*1000]}
		c.VisibleTo(t.Context(), res)
		kept += len(res.Tools)
	}
	if kept != 20_000 {
		t.Fatalf("%d of 20,000 exposed tools kept", kept)
	}
	t.Logf("filtering one listing of 20,000 exposed tools took %s", time.Since(begun))
	if took := time.Since(begun); took > 500*time.Millisecond {
		t.Errorf("filtering one listing of 20,000 exposed tools took %s", took)
	}
}
