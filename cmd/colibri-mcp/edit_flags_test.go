package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// add sets what its own hints suggest: a description, cwd, spares,
// pass_env and the sandbox's grants; a hint it follows already is not
// repeated; --replace says "replaced"; each flag in the wrong place is
// refused naming it, the registry unchanged.
func TestAddFlags(t *testing.T) {
	home := t.TempDir()
	reg := filepath.Join(home, "cfg", "colibri", "external-mcp.json")
	if code, _, stderr := asUser(t, home, "init"); code != 0 {
		t.Fatal(stderr)
	}
	data := filepath.Join(home, "data")
	out := filepath.Join(home, "out")
	os.MkdirAll(data, 0o755)
	os.MkdirAll(out, 0o755)
	args := []string{"add", "fs", "--description", "files of the project", "--cwd", home, "--spare", "1", "--pass-env", "HTTPS_PROXY", "--pass-env", "npm_config_*"}
	if runtime.GOOS == "linux" {
		args = append(args, "--read", data, "--write", out, "--no-net")
	}
	args = append(args, "--", "npx", "-y", "@modelcontextprotocol/server-filesystem@2025.8.21", data)
	code, stdout, stderr := asUser(t, home, args...)
	if code != 0 {
		t.Fatalf("add: exit %d\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, `"spare": 1`) || strings.Contains(stdout, `"pass_env"`) {
		t.Errorf("a hint the entry follows already:\n%s", stdout)
	}
	got := mustRead(t, reg)
	want := []string{`"description": "files of the project"`, `"cwd": "` + home + `"`, `"spare": 1`, `"pass_env": [`, `"npm_config_*"`}
	if runtime.GOOS == "linux" {
		want = append(want, `"sandbox": {`, `"read": [`, `"`+data+`"`, `"write": [`, `"`+out+`"`, `"net": false`)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("registry does not hold %s:\n%s", w, got)
		}
	}

	code, stdout, stderr = asUser(t, home, "add", "fs", "--replace", "--", "npx", "-y", "other")
	if code != 0 || !strings.HasPrefix(stdout, `replaced "fs" in `+reg) {
		t.Fatalf("add --replace: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, _ = asUser(t, home, "add", "new", "--replace", "--", "echo"); code != 0 || !strings.HasPrefix(stdout, `added "new" to `) {
		t.Fatalf("add --replace of a new name: exit %d\n%s", code, stdout)
	}

	before := mustRead(t, reg)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "x", "--spare", "5", "--", "echo"}, "--spare 5: 0 to 4"},
		{[]string{"add", "x", "--spare", "1", "--persistent", "--", "echo"}, "--spare is for a process per request"},
		{[]string{"add", "x", "--cwd", "/tmp", "--url", "https://example.com/mcp"}, "--cwd is for a command"},
		{[]string{"add", "x", "--no-net", "--url", "https://example.com/mcp"}, "--no-net are for a command"},
		{[]string{"add", "x", "--pass-env", "A=1", "--", "echo"}, "not NAME=VALUE"},
		{[]string{"add", "x", "--no-net", "--net", "example.com", "--", "echo"}, "not both"},
		{[]string{"add", "x", "--registry-url", "https://r.example", "--", "echo"}, "--registry-url is for --from-registry"},
	} {
		code, _, stderr := asUser(t, home, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if mustRead(t, reg) != before {
		t.Error("a refused add changed the registry")
	}
}
