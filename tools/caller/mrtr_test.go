package caller

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 caller's elicitation answer is held to what go-sdk holds a
// 2025-11-25 caller's to before the hosted server sees it: an action MCP
// defines, and accepted content matching the requested schema (its
// defaults filled in); anything else is refused to the caller.
func TestElicitAnswerHeldToTheSchema(t *testing.T) {
	req := &mcp.ElicitParams{Message: "who?", RequestedSchema: map[string]any{"type": "object",
		"properties": map[string]any{"name": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer", "default": 3}},
		"required":   []any{"name"}}}
	for _, c := range []struct {
		what string
		resp *mcp.ElicitResult
		want string // "" answers it
	}{
		{"accepted, matching", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, ""},
		{"declined", &mcp.ElicitResult{Action: "decline"}, ""},
		{"cancelled", &mcp.ElicitResult{Action: "cancel"}, ""},
		{"a wrong type", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": 5}}, "does not match the elicitation's requested schema"},
		{"a required field missing", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"n": 1}}, "does not match"},
		{"an action of its own", &mcp.ElicitResult{Action: "approve-all"}, `has action "approve-all"`},
	} {
		got := mismatch(req, c.resp)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
	}
	ok := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}
	if mismatch(req, ok) != "" || ok.Content["n"] != float64(3) && ok.Content["n"] != 3 {
		t.Errorf("the schema's default not filled in: %v", ok.Content)
	}
}
