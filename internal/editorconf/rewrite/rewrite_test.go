package rewrite

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf"
)

// Apply removes the imported servers and adds colibri's entry, keeping
// every other byte: comments and trailing commas of JSONC, other settings,
// other servers; and TOML tables for Codex.
func TestApply(t *testing.T) {
	vscode := `{
  // my servers
  "inputs": [],
  "servers": {
    "keep": {"type": "stdio", "command": "/bin/keep"}, // stays
    "gone": {"type": "stdio", "command": "/bin/gone"},
  },
}
`
	out, err := Apply([]byte(vscode), editorconf.VSCode, []string{"gone"}, "/usr/bin/colibri-mcp", []string{"--external-config", "/r.json"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{"// my servers", `"keep": {"type": "stdio", "command": "/bin/keep"}, // stays`, `"colibri": {`, `"type": "stdio"`, `"--external-config"`} {
		if !strings.Contains(s, want) {
			t.Errorf("VS Code file lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "gone") {
		t.Errorf("the imported server is still there:\n%s", s)
	}
	// Applying again replaces colibri's entry rather than adding a second.
	again, err := Apply(out, editorconf.VSCode, nil, "/usr/bin/colibri-mcp", nil)
	if err != nil || strings.Count(string(again), `"colibri"`) != 1 {
		t.Errorf("Apply again:\n%s (%v)", again, err)
	}

	codex := "model = \"o3\"\n\n[mcp_servers.gone]\ncommand = \"/bin/gone\"\n\n[mcp_servers.gone.env]\nA = \"1\"\n\n[mcp_servers.keep]\ncommand = \"/bin/keep\"\n\n[profiles.x]\nmodel = \"y\"\n"
	out, err = Apply([]byte(codex), editorconf.Codex, []string{"gone"}, "/usr/bin/colibri-mcp", []string{"--external-config", "/r.json"})
	if err != nil {
		t.Fatal(err)
	}
	s = string(out)
	if strings.Contains(s, "gone") || !strings.Contains(s, "[mcp_servers.keep]") || !strings.Contains(s, "[profiles.x]") ||
		!strings.Contains(s, "[mcp_servers.colibri]\ncommand = \"/usr/bin/colibri-mcp\"\nargs = [\"--external-config\", \"/r.json\"]\n") {
		t.Errorf("Codex file:\n%s", s)
	}

	// A server import cannot remove (a dotted key outside its table) is an
	// error: nothing to write.
	dotted := "[mcp_servers]\ngone.command = \"/bin/gone\"\n"
	if _, err := Apply([]byte(dotted), editorconf.Codex, []string{"gone"}, "/c", nil); err == nil || !strings.Contains(err.Error(), "edit it by hand") {
		t.Errorf("Apply of a dotted-key server: %v", err)
	}

	zed := `{"theme": "One", "context_servers": {}}`
	out, err = Apply([]byte(zed), editorconf.Zed, nil, "/c", nil)
	if err != nil || !strings.Contains(string(out), `"source": "custom"`) || !strings.Contains(string(out), `"theme": "One"`) {
		t.Errorf("Zed file:\n%s (%v)", out, err)
	}
}

// Strict JSON stays strict whichever member goes: first, middle, last, all.
func TestApplyStrictJSON(t *testing.T) {
	doc := "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"/bin/a\"},\n    \"b\": {\"command\": \"/bin/b\"},\n    \"c\": {\"command\": \"/bin/c\"}\n  },\n  \"other\": 1\n}\n"
	for _, remove := range [][]string{{"a"}, {"b"}, {"c"}, {"a", "c"}, {"a", "b", "c"}} {
		out, err := Apply([]byte(doc), editorconf.Claude, remove, "/c", nil)
		if err != nil {
			t.Fatalf("remove %v: %v", remove, err)
		}
		if !json.Valid(out) {
			t.Errorf("remove %v: not strict JSON:\n%s", remove, out)
		}
		for _, r := range remove {
			if strings.Contains(string(out), `"`+r+`"`) {
				t.Errorf("remove %v: %s is still there:\n%s", remove, r, out)
			}
		}
		if !strings.Contains(string(out), "\"other\": 1") {
			t.Errorf("remove %v: lost another setting:\n%s", remove, out)
		}
	}
	out, _ := Apply([]byte(doc), editorconf.Claude, []string{"b"}, "/c", nil)
	if !strings.Contains(string(out), "    \"a\": {\"command\": \"/bin/a\"},\n    \"c\": {\"command\": \"/bin/c\"}\n") {
		t.Errorf("the other entries' lines changed:\n%s", out)
	}
}

func TestKeepArgs(t *testing.T) {
	for _, tc := range []struct{ args, old, want []string }{
		{[]string{"--external-config", "/n.json"}, []string{"--external-config", "/o.json", "--aggregate", "--timeout", "45s"}, []string{"--external-config", "/n.json", "--aggregate", "--timeout", "45s"}},
		{[]string{"--external-config", "/n.json", "--env-file", "/n.env"}, []string{"--env-file=/o.env", "--external-config=/o.json", "--external-call"}, []string{"--external-config", "/n.json", "--env-file", "/n.env", "--external-call"}},
		{[]string{"--external-config", "/n.json", "--external-call"}, []string{"--external-call"}, []string{"--external-config", "/n.json", "--external-call"}},
	} {
		if got := KeepArgs(tc.args, tc.old); !slices.Equal(got, tc.want) {
			t.Errorf("KeepArgs(%q, %q) = %q, want %q", tc.args, tc.old, got, tc.want)
		}
	}
}
