package registry

import (
	"strings"
	"testing"
)

// pass_env: globs need a literal start, secret-looking names are refused,
// the top-level one is every entry's default; a command entry's working
// directory defaults to the registry's folder.
func TestPassEnvAndDir(t *testing.T) {
	doc := `{"pass_env": ["HTTPS_PROXY", "npm_config_*"], "servers": {
		"a": {"command": "/bin/a"},
		"b": {"command": "/bin/b", "pass_env": ["NO_PROXY"]},
		"c": {"command": "/bin/c", "cwd": "/tmp"}}}`
	reg, err := Parse(strings.NewReader(doc), "/etc/colibri/external-mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Servers["a"].PassEnv; len(got) != 2 || got[1] != "npm_config_*" {
		t.Errorf("a inherits %q", got)
	}
	if got := reg.Servers["b"].PassEnv; len(got) != 1 || got[0] != "NO_PROXY" {
		t.Errorf("b's own is %q", got)
	}
	if reg.Servers["a"].Dir != "/etc/colibri" || reg.Servers["c"].Cwd != "/tmp" {
		t.Errorf("dir %q, cwd %q", reg.Servers["a"].Dir, reg.Servers["c"].Cwd)
	}
	for bad, says := range map[string]string{
		`{"servers": {"a": {"command": "/bin/a", "pass_env": ["GITHUB_TOKEN"]}}}`: "/servers/a/pass_env/0: \"GITHUB_TOKEN\" looks like a secret",
		`{"pass_env": ["npm_config__auth"], "servers": {}}`:                       "/pass_env/0: \"npm_config__auth\" looks like a secret",
		`{"pass_env": ["*"], "servers": {}}`:                                      "/pass_env/0: \"*\" would pass variables of every name",
		`{"servers": {"a": {"command": "/bin/a", "pass_env": ["A B"]}}}`:          "/servers/a/pass_env/0: \"A B\" is not a variable name",
	} {
		if _, err := Parse(strings.NewReader(bad), ""); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("Parse(%s) = %v, want %q", bad, err, says)
		}
	}
}
