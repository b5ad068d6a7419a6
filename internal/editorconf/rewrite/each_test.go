package rewrite

import (
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf"
)

// Each replaces the named entries where they stand, in every format, and
// keeps every other byte; a name the file lacks is an error.
func TestEach(t *testing.T) {
	args := func(n string) []string { return []string{"--external-config", "/r.json", "serve", "--only", n} }
	for _, tc := range []struct {
		name   string
		f      editorconf.Format
		in     string
		keep   []string
		gone   []string
		errors bool
	}{
		{"claude", editorconf.Claude, "{\n  \"mcpServers\": {\n    // mine\n    \"a\": {\"command\": \"a-mcp\"},\n    \"b\": {\"command\": \"b-mcp\"}\n  }\n}\n",
			[]string{"// mine", `"b": {"command": "b-mcp"}`, `"--only",` + "\n        \"a\""}, []string{"a-mcp"}, false},
		{"zed", editorconf.Zed, `{"context_servers": {"a": {"command": "a-mcp"}}, "theme": "One"}`,
			[]string{`"source": "custom"`, `"theme": "One"`}, []string{"a-mcp"}, false},
		{"codex", editorconf.Codex, "model = \"o3\"\n\n[mcp_servers.a]\ncommand = \"a-mcp\"\n\n[mcp_servers.a.env]\nX = \"1\"\n\n[mcp_servers.b]\ncommand = \"b-mcp\"\n",
			[]string{"model = \"o3\"", "[mcp_servers.a]\ncommand = \"/bin/colibri-mcp\"\nargs = [\"--external-config\", \"/r.json\", \"serve\", \"--only\", \"a\"]", "[mcp_servers.b]\ncommand = \"b-mcp\""},
			[]string{"a-mcp", "X = \"1\""}, false},
		{"missing", editorconf.Claude, `{"mcpServers": {"b": {"command": "b-mcp"}}}`, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Each([]byte(tc.in), tc.f, map[string][]string{"a": args("a")}, "/bin/colibri-mcp")
			if tc.errors {
				if err == nil {
					t.Fatalf("no error:\n%s", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.keep {
				if !strings.Contains(string(out), k) {
					t.Errorf("output lacks %q:\n%s", k, out)
				}
			}
			for _, g := range tc.gone {
				if strings.Contains(string(out), g) {
					t.Errorf("output still holds %q:\n%s", g, out)
				}
			}
		})
	}
}
