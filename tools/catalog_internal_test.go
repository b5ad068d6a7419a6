package tools

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

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
	h := host.New(host.Options{Timeout: 5 * time.Second})
	defer h.Close()
	s := New(Options{Registry: func() (*registry.Registry, error) { return reg, nil }, Host: h, Aggregate: true,
		RegistryPoll: -1, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	defer s.Close()
	server := s.NewServer("test")
	s.cat.settle(t.Context()) // the first fill (which fails): lists heard meanwhile wait for it

	s.cat.heard(srv, []*mcp.Tool{bad, good})
	s.cat.mu.Lock()
	_, badOffered := s.cat.offered["x__bad"]
	_, goodOffered := s.cat.offered["x__good"]
	_, badRouted := s.cat.routes["x__bad"]
	s.cat.mu.Unlock()
	if badOffered || badRouted || !goodOffered {
		t.Errorf("offered: bad %v (routed %v), good %v; want only good", badOffered, badRouted, goodOffered)
	}
	if !strings.Contains(logs.String(), "tool=bad") || !strings.Contains(logs.String(), "go-sdk refused it") {
		t.Errorf("the refusal was not logged:\n%s", logs)
	}
	_ = server
}

// A tools/list page of exposed tools is filtered by an index, not by a
// search of the hosted list for each tool: with 20,000 hosted tools, the
// pages of one listing take milliseconds (a search made it seconds).
func TestVisibleToScales(t *testing.T) {
	srv := &registry.Server{Name: "big", Command: "/nonexistent/server"}
	reg := &registry.Registry{Servers: map[string]*registry.Server{"big": srv}}
	h := host.New(host.Options{Timeout: 5 * time.Second})
	defer h.Close()
	s := New(Options{Registry: func() (*registry.Registry, error) { return reg, nil }, Host: h, Aggregate: true, RegistryPoll: -1})
	defer s.Close()
	s.cat.refresh()
	var hosted []*mcp.Tool
	for i := range 20_000 {
		hosted = append(hosted, &mcp.Tool{Name: fmt.Sprintf("t%05d", i), InputSchema: map[string]any{"type": "object"}})
	}
	s.cat.heard(srv, hosted)

	var page []*mcp.Tool
	for i := range 20_000 {
		page = append(page, &mcp.Tool{Name: fmt.Sprintf("big__t%05d", i)})
	}
	begun := time.Now()
	kept := 0
	for p := range 20 {
		res := &mcp.ListToolsResult{Tools: page[p*1000 : (p+1)*1000]}
		s.cat.visibleTo(t.Context(), res)
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
