package tools_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// list_tools with a query ranks the tools colibri already read, starts no
// process, and names the servers it has not read.
func TestListToolsQuery(t *testing.T) {
	sp := &spawns{}
	reg := newLive(map[string]*registry.Server{
		"files": appsServer(t, []map[string]any{
			{"name": "read_text_file", "description": "Read the complete contents of a file as text. More.", "inputSchema": object},
			{"name": "write_file", "description": "Create a new file or overwrite one.", "inputSchema": object},
		}, 0),
		"never": {Command: fakeBin, Args: []string{"ok"}},
	})
	svc := newLiveService(t, reg, serviceOpts{poll: -1, onSpawn: sp.add})
	cs := connect(t, svc)
	if res := callTool(t, cs, tools.ListToolsTool, map[string]any{"server": "files"}); res.IsError {
		t.Fatalf("list files: %v", res.Content)
	}
	before := sp.of("files") + sp.of("never")
	res := callTool(t, cs, tools.ListToolsTool, map[string]any{"query": "read a file"})
	if res.IsError {
		t.Fatalf("query: %v", res.Content)
	}
	var out struct {
		Matches []struct {
			Server, Tool, Description string
			Score                     float64
		}
		Unseen []string
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Matches) == 0 || out.Matches[0].Server != "files" || out.Matches[0].Tool != "read_text_file" ||
		out.Matches[0].Description != "Read the complete contents of a file as text." || out.Matches[0].Score <= 0 {
		t.Errorf("matches: %s", b)
	}
	if len(out.Unseen) != 1 || out.Unseen[0] != "never" {
		t.Errorf("unseen: %v", out.Unseen)
	}
	if after := sp.of("files") + sp.of("never"); after != before {
		t.Errorf("a query started %d processes", after-before)
	}
	if !strings.Contains(string(b), `"matches"`) || strings.Contains(string(b), `"servers"`) {
		t.Errorf("shape: %s", b)
	}
	// Not with tool.
	res = callTool(t, cs, tools.ListToolsTool, map[string]any{"query": "read", "tool": "read_text_file"})
	if kind := errorKind(t, res); kind != "invalid_arguments" {
		t.Errorf("query with tool: kind %q", kind)
	}
}

// A server pinned by an earlier colibri (the pin file holds its definitions)
// is searched by a new one that has not listed it: the query starts no
// process, finds its tools, and does not call it unseen.
func TestListToolsQuerySearchesPinnedDefinitions(t *testing.T) {
	pins := filepath.Join(t.TempDir(), "pins.json")
	earlier := pin.Open(pins, pin.Options{})
	if _, err := earlier.Check("files", pin.NoCaps, []*mcp.Tool{
		{Name: "read_text_file", Description: "Read the complete contents of a file as text.", InputSchema: map[string]any{"type": "object"}},
		{Name: "write_file", Description: "Create a new file or overwrite one.", InputSchema: map[string]any{"type": "object"}},
	}); err != nil {
		t.Fatal(err)
	}
	sp := &spawns{}
	reg := newLive(map[string]*registry.Server{"files": {Command: fakeBin, Args: []string{"ok"}}})
	h := host.New(host.Options{Timeout: 10 * time.Second, OnSpawn: sp.add})
	t.Cleanup(h.Close)
	svc := tools.New(tools.Options{Registry: reg.load, ConfigPath: "in-memory", Host: h, RegistryPoll: -1,
		Pins: pin.Open(pins, pin.Options{})})
	t.Cleanup(svc.Close)
	cs := connect(t, svc)
	res := callTool(t, cs, tools.ListToolsTool, map[string]any{"query": "read a file"})
	if res.IsError {
		t.Fatalf("query: %v", res.Content)
	}
	var out struct {
		Matches []struct{ Server, Tool string }
		Unseen  []string
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	if len(out.Matches) == 0 || out.Matches[0].Server != "files" || out.Matches[0].Tool != "read_text_file" {
		t.Errorf("matches: %s", b)
	}
	if len(out.Unseen) != 0 {
		t.Errorf("unseen %v: the pinned server counts as seen", out.Unseen)
	}
	if n := sp.of("files"); n != 0 {
		t.Errorf("a query started %d processes", n)
	}
}
