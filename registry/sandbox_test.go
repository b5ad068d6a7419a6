//go:build linux

package registry_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

func parseIn(t *testing.T, dir, doc string) (*registry.Registry, error) {
	t.Helper()
	path := filepath.Join(dir, "external-mcp.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return registry.Load(path)
}

// The top-level sandbox is every command entry's default; an entry's own
// replaces it, false opts out, a jailed or remote entry does not take it;
// relative paths are read against the registry's folder, ~ is HOME.
func TestSandboxDefaultsAndPaths(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	t.Setenv("HOME", home)
	os.Mkdir(filepath.Join(dir, "data"), 0o755)
	os.Mkdir(filepath.Join(home, ".npm"), 0o755)
	reg, err := parseIn(t, dir, `{"sandbox": {"read": ["data", "~/.npm"], "net": false},
		"servers": {
			"inherits": {"command": "/bin/true"},
			"own": {"command": "/bin/true", "sandbox": {"write": ["./data"], "max_memory_mb": 512}},
			"out": {"command": "/bin/true", "sandbox": false},
			"jailed": {"command": "/bin/true", "jail": {"name": "mcp0"}},
			"remote": {"url": "https://example.com/mcp"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"inherits": "sandboxed: read " + filepath.Join(dir, "data") + " " + filepath.Join(home, ".npm") + ", write nothing more, net off, unix none",
		"own":      "sandboxed: read nothing more, write " + filepath.Join(dir, "data") + ", net on, unix none, max_memory_mb 512",
		"out":      "unconfined: can read everything colibri can",
		"jailed":   "jail mcp0",
		"remote":   "remote: no process of this machine",
	}
	for name, line := range want {
		if got := reg.Servers[name].ConfinementLine(); got != line {
			t.Errorf("%s: %q, want %q", name, got, line)
		}
	}
	if reg.Servers["out"].Confinement() != nil || reg.Servers["jailed"].Confinement() != nil {
		t.Error("an opted-out or jailed entry has a sandbox")
	}
	// An edit of the top-level sandbox is an edit of the entries it applies to.
	reg2, err := parseIn(t, dir, `{"sandbox": {"read": ["data"]}, "servers": {"inherits": {"command": "/bin/true"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if reg.Servers["inherits"].ProcessKey() == reg2.Servers["inherits"].ProcessKey() {
		t.Error("the process key does not follow the top-level sandbox")
	}
}

func TestSandboxProblems(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, doc, want string }{
		{"a missing path, named by its location", `{"servers": {"a": {"command": "/bin/true", "sandbox": {"read": ["/etc", "nope"]}}}}`,
			"/servers/a/sandbox/read/1: " + filepath.Join(dir, "nope") + " does not exist"},
		{"a missing unix socket, named by its location", `{"servers": {"a": {"command": "/bin/true", "sandbox": {"unix": ["/run/nope/.s.PGSQL.5432"]}}}}`,
			"/servers/a/sandbox/unix/0: /run/nope/.s.PGSQL.5432 does not exist"},
		{"a destination that is not one, at its location", `{"servers": {"a": {"command": "/bin/true", "sandbox": {"net": ["api.github.com", "http://x.com/"]}}}}`,
			`/servers/a/sandbox/net/1: "http://x.com/": a destination is a host name`},
		{"a net list with a jail", `{"servers": {"a": {"command": "/bin/true", "jail": {"name": "j"}, "sandbox": {"net": ["x.com"]}}}}`,
			`/servers/a/sandbox: "sandbox" cannot go with "jail"`},
		{"a missing path of the top-level sandbox, said once", `{"sandbox": {"write": ["/nope"]}, "servers": {"a": {"command": "/bin/true"}, "b": {"command": "/bin/true"}}}`,
			"/sandbox/write/0: /nope does not exist"},
		{"with a jail", `{"servers": {"a": {"command": "/bin/true", "jail": {"name": "j"}, "sandbox": {}}}}`,
			`/servers/a/sandbox: "sandbox" cannot go with "jail"`},
		{"with a url", `{"servers": {"a": {"url": "https://example.com/", "sandbox": {}}}}`,
			`/servers/a/sandbox: "sandbox" applies only to a command entry`},
		{"true is not a sandbox", `{"servers": {"a": {"command": "/bin/true", "sandbox": true}}}`, "/servers/a/sandbox"},
		{"an unknown key", `{"servers": {"a": {"command": "/bin/true", "sandbox": {"reed": []}}}}`, "/servers/a/sandbox"},
		{"too little memory", `{"servers": {"a": {"command": "/bin/true", "sandbox": {"max_memory_mb": 1}}}}`, "/servers/a/sandbox"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseIn(t, dir, c.doc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to hold %q", err, c.want)
			}
			if strings.Count(err.Error(), c.want) != 1 {
				t.Errorf("%q said more than once: %v", c.want, err)
			}
		})
	}
}

// A sandbox path with a NUL or a newline is a config error at its JSON
// location, the path quoted: a newline does not start a line of its own in
// check's output.
func TestSandboxPathWithControlCharacters(t *testing.T) {
	_, err := parseIn(t, t.TempDir(), `{"servers": {"x": {"command": "/bin/true", "sandbox": {"read": ["/tmp/a\u0000b", "/nonexistent\n[ok] all good"]}}}}`)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{`/servers/x/sandbox/read/0: "/tmp/a\x00b" does not exist`, `/servers/x/sandbox/read/1: "/nonexistent\n[ok] all good" does not exist`} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if strings.ContainsAny(msg, "\n\x00") {
		t.Errorf("%q holds a raw control character", msg)
	}
}

// Every entry carries the registry's oauth.token_file paths, which no
// sandbox may grant; max_open_files and home are read and shown.
func TestSandboxTokenFilesOpenFilesAndHome(t *testing.T) {
	dir := t.TempDir()
	reg, err := parseIn(t, dir, `{"servers": {
		"gh": {"url": "https://example.com/mcp", "oauth": {"grant": "authorization_code", "token_file": "/opt/tokens/gh.json"}},
		"box": {"command": "/bin/true", "sandbox": {"max_open_files": 256, "home": "per_request"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	box := reg.Servers["box"]
	if len(box.TokenFiles) != 1 || box.TokenFiles[0] != "/opt/tokens/gh.json" {
		t.Errorf("TokenFiles = %q", box.TokenFiles)
	}
	if sb := box.Confinement(); sb.OpenFiles() != 256 || sb.Home != registry.HomePerRequest {
		t.Errorf("sandbox %+v", sb)
	}
	if line := box.ConfinementLine(); !strings.HasSuffix(line, ", max_open_files 256, home per_request") {
		t.Errorf("line %q", line)
	}
	if (&registry.Sandbox{}).OpenFiles() != registry.DefaultMaxOpenFiles {
		t.Error("no default open-file limit")
	}
	for _, doc := range []string{
		`{"servers": {"a": {"command": "/bin/true", "sandbox": {"home": "per_call"}}}}`,
		`{"servers": {"a": {"command": "/bin/true", "sandbox": {"max_open_files": 3}}}}`,
	} {
		if _, err := parseIn(t, dir, doc); err == nil || !strings.Contains(err.Error(), "/servers/a/sandbox/") {
			t.Errorf("%s: err = %v, want one at its location", doc, err)
		}
	}
}

// "net" as a list is the destinations; it is written back as a list.
func TestSandboxNetList(t *testing.T) {
	reg, err := parseIn(t, t.TempDir(), `{"servers": {"a": {"command": "/bin/true", "sandbox": {"net": ["api.github.com", "*.npmjs.org:443"], "max_connections": 8}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	sb := reg.Servers["a"].Confinement()
	if sb.NetAllowed() || len(sb.Destinations) != 2 || sb.Connections() != 8 {
		t.Errorf("sandbox %+v", sb)
	}
	if line := reg.Servers["a"].ConfinementLine(); !strings.Contains(line, ", net api.github.com,*.npmjs.org:443, ") {
		t.Errorf("line %q", line)
	}
	b, err := sb.MarshalJSON()
	if err != nil || !strings.Contains(string(b), `"net":["api.github.com","*.npmjs.org:443"]`) {
		t.Errorf("marshalled %s, %v", b, err)
	}
}
