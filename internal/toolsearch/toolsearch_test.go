package toolsearch

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// corpus is the tools of the npm servers the tests host (server-everything,
// server-filesystem and server-memory, as testdata/peers pins them), as
// their tools/list returned them: name, title, description.
func corpus(t *testing.T) []Tool {
	t.Helper()
	b, err := os.ReadFile("testdata/npm-tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string][]struct{ Name, Title, Description string }
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var out []Tool
	for server, tools := range m {
		for _, tl := range tools {
			out = append(out, Tool{Server: server, Name: tl.Name, Title: tl.Title, Description: tl.Description})
		}
	}
	return out
}

// The right tool first, for what a model would ask.
func TestRankFindsTheRightToolFirst(t *testing.T) {
	tools := corpus(t)
	for _, tc := range []struct{ query, server, tool string }{
		{"read a text file", "filesystem", "read_text_file"},
		{"add two numbers", "everything", "get-sum"},
		{"create a directory", "filesystem", "create_directory"},
		{"search files matching a pattern", "filesystem", "search_files"},
		{"delete entities from the knowledge graph", "memory", "delete_entities"},
		{"echo a message back", "everything", "echo"},
		{"which directories may I access", "filesystem", "list_allowed_directories"},
		{"move or rename a file", "filesystem", "move_file"},
		{"tiny image", "everything", "get-tiny-image"},
		{"add observations to an entity", "memory", "add_observations"},
		{"long running operation with progress", "everything", "trigger-long-running-operation"},
		{"read the whole knowledge graph", "memory", "read_graph"},
		{"environment variables", "everything", "get-env"},
		{"edit a file", "filesystem", "edit_file"},
		{"readTextFile", "filesystem", "read_text_file"},
	} {
		got := Rank(tc.query, tools, 10)
		if len(got) == 0 || got[0].Tool.Server != tc.server || got[0].Tool.Name != tc.tool {
			var names []string
			for _, m := range got[:min(3, len(got))] {
				names = append(names, m.Tool.Server+"/"+m.Tool.Name+" "+strings.TrimRight(strings.TrimRight(json.Number(ftoa(m.Score)).String(), "0"), "."))
			}
			t.Errorf("%q: first %v, want %s/%s", tc.query, names, tc.server, tc.tool)
		}
	}
}

func ftoa(f float64) string { b, _ := json.Marshal(f); return string(b) }

func TestRankBounds(t *testing.T) {
	if got := Rank("", corpus(t), 10); got != nil {
		t.Errorf("an empty query matched %d", len(got))
	}
	if got := Rank("the of a", corpus(t), 10); got != nil {
		t.Errorf("a query of stop words matched %d", len(got))
	}
	if got := Rank("file", corpus(t), 3); len(got) != 3 {
		t.Errorf("limit 3: %d matches", len(got))
	}
	// Stable: ties ordered by server and name.
	a, b := Rank("file", corpus(t), 10), Rank("file", corpus(t), 10)
	if !slices.EqualFunc(a, b, func(x, y Match) bool { return x.Tool == y.Tool }) {
		t.Error("two searches ordered differently")
	}
	// A huge list and a huge query cost a bounded time.
	desc := strings.Repeat("lorem ipsum dolor sit amet ", 2000)
	big := make([]Tool, MaxTools+1000)
	for i := range big {
		big[i] = Tool{Server: "s", Name: "tool_x", Description: desc}
	}
	start := time.Now()
	got := Rank(strings.Repeat("amet dolor zzz ", 500), big, 10)
	if took := time.Since(start); took > 20*time.Second { // (about half a second without -race)
		t.Errorf("%d tools of 54 KB descriptions took %v", len(big), took)
	}
	if len(got) != 10 {
		t.Errorf("%d matches", len(got))
	}
}
