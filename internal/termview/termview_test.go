package termview

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

func TestSafeText(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcödé\tand\nlines": "plain text, ünïcödé\tand\nlines",
		"\x1b]0;pwned\x07":                `\u001b]0;pwned\u0007`,
		"\x1b[2J\rover":                   `\u001b[2J\u000dover`,
		"del\x7f c1\u009b8m":              `del\u007f c1\u009b8m`,
		"lone \x9b byte":                  `lone \x9b byte`,
	} {
		if got := SafeText(in); got != want {
			t.Errorf("SafeText(%q) = %q, want %q", in, got, want)
		}
	}
	// Inside a JSON string the escapes keep the document valid.
	b, _ := json.Marshal(map[string]string{"d": "a\u009bb\x7f"})
	if out := SafeText(string(b)); !json.Valid([]byte(out)) {
		t.Errorf("%s is no longer JSON", out)
	}
}

// describe shows nested arguments as rows of their own, bounded.
func TestDescribeShowsNestedParameters(t *testing.T) {
	var b bytes.Buffer
	SchemaTable(&b, map[string]any{"type": "object", "required": []any{"query"}, "properties": map[string]any{
		"query": map[string]any{"type": "object", "required": []any{"text"}, "properties": map[string]any{
			"text":  map[string]any{"type": "string", "description": "what to find"},
			"limit": map[string]any{"type": "integer"}}},
		"tags": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{
			"name": map[string]any{"type": "string"}}}},
	}})
	for _, want := range []string{"query        object", "query.text   string           yes", "query.limit  integer", "tags         array of object", "tags[].name  string"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}

// The progress line is cleared before the result is written (stdout and
// stderr the same terminal, as in a shell).
func TestProgressClearedBeforeResult(t *testing.T) {
	p := NewProgress(&bytes.Buffer{})
	p.Show(t.Context(), progressParams(1, 2))
	p.Done()
	p.Show(t.Context(), progressParams(2, 2)) // late: drawn over the result otherwise
	got := p.w.(*bytes.Buffer).String()
	if !strings.HasSuffix(got, "progress: 1/2\r\033[K") {
		t.Errorf("progress output %q: want the line cleared, and nothing after done", got)
	}
}

func progressParams(n, total float64) *mcp.ProgressNotificationParams {
	return &mcp.ProgressNotificationParams{Progress: n, Total: total}
}

// Each server is shown as soon as it answers: one that hangs holds back no
// other; the failures are counted.
func TestEachServerShowsEachAsItAnswers(t *testing.T) {
	var out syncbuf.Buffer
	failures := EachServer(&out, []string{"slow", "fast"}, func(name string) tools.ServerTools {
		if name == "slow" {
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "fast: 0 tools"); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Error("the fast server waited for the slow one")
					break
				}
			}
			return tools.ServerTools{Server: name, Error: &tools.ErrorDetail{Kind: "timeout", Message: "no answer"}}
		}
		return tools.ServerTools{Server: name}
	})
	if failures != 1 || !strings.Contains(out.String(), "slow: error: timeout: no answer") {
		t.Errorf("%d failures, output:\n%s", failures, out.String())
	}
}
