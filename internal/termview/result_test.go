package termview

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A result whose text is its structuredContent (as the spec asks of a tool
// with an output schema) shows it once; another structuredContent gets its
// structured line.
func TestResultStructuredOnce(t *testing.T) {
	var b strings.Builder
	Result(&b, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"sum": 3, "a": 1}`}}, StructuredContent: map[string]any{"a": 1, "sum": 3}})
	if strings.Contains(b.String(), "structured:") {
		t.Errorf("the same JSON twice:\n%s", b.String())
	}
	b.Reset()
	Result(&b, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "3"}}, StructuredContent: map[string]any{"sum": 3}})
	if !strings.Contains(b.String(), `structured: {"sum":3}`) {
		t.Errorf("structured line missing:\n%s", b.String())
	}
}
