package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

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
