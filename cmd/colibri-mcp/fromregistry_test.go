package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/mcpregistry/registrytest"
)

// asUserEnv is asUser with more variables.
func asUserEnv(t *testing.T, home string, extra []string, args ...string) (int, string, string) {
	t.Helper()
	ctx := context.WithValue(context.Background(), rootKey{}, false)
	var out, errb bytes.Buffer
	env := append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "cfg"), "PATH=" + os.Getenv("PATH")}, extra...)
	err := run(ctx, append([]string{"colibri-mcp"}, args...), strings.NewReader(""), &out, &errb, env)
	return exitCode(err, &errb), out.String(), errb.String()
}

// add --from-registry against a fake of the MCP Registry's API serving
// real server.json documents: the entry runs the exact version, the
// secrets are references listed with how to set them, servers shows where
// the entry came from; every failure names the URL and leaves the registry
// byte for byte as it was.
func TestAddFromRegistry(t *testing.T) {
	reg := registrytest.New(t, registrytest.Docs(t, "../../testdata/mcpregistry")...)
	home := t.TempDir()
	path := filepath.Join(home, "cfg", "colibri", "external-mcp.json")
	if code, _, stderr := asUser(t, home, "init"); code != 0 {
		t.Fatalf("init: %s", stderr)
	}

	// The latest, through COLIBRI_MCP_REGISTRY_URL.
	code, stdout, stderr := asUserEnv(t, home, []string{"COLIBRI_MCP_REGISTRY_URL=" + reg.URL}, "add", "brave", "--from-registry", "io.github.brave/brave-search-mcp-server")
	if code != 0 {
		t.Fatalf("add: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{`added "brave" to ` + path + `: npm @brave/brave-search-mcp-server@2.1.3 (io.github.brave/brave-search-mcp-server@2.1.3 from ` + reg.URL + `)`,
		"set where colibri runs", "  BRAVE_API_KEY (secret): Your API key for the service", "--env-file"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("add's output does not say %q:\n%s", want, stdout)
		}
	}
	got := mustRead(t, path)
	for _, want := range []string{`"command": "npx"`, `"@brave/brave-search-mcp-server@2.1.3"`, `"BRAVE_API_KEY": "${BRAVE_API_KEY}"`,
		`"source": {`, `"name": "io.github.brave/brave-search-mcp-server"`, `"version": "2.1.3"`, `"registry": "` + reg.URL + `"`} {
		if !strings.Contains(got, want) {
			t.Errorf("registry does not hold %s:\n%s", want, got)
		}
	}

	// An exact older version, by flag.
	if code, stdout, stderr = asUser(t, home, "add", "brave-old", "--from-registry", "io.github.brave/brave-search-mcp-server@2.0.26", "--registry-url", reg.URL); code != 0 {
		t.Fatalf("add @2.0.26: exit %d\n%s%s", code, stdout, stderr)
	}
	if got = mustRead(t, path); !strings.Contains(got, `"@brave/brave-search-mcp-server@2.0.26"`) || !strings.Contains(got, `"version": "2.0.26"`) {
		t.Errorf("registry after @2.0.26:\n%s", got)
	}
	code, stdout, _ = asUser(t, home, "servers")
	if code != 0 || !strings.Contains(stdout, "[io.github.brave/brave-search-mcp-server@2.0.26]") {
		t.Errorf("servers: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = asUser(t, home, "servers", "--json")
	if code != 0 || !strings.Contains(stdout, "\"source\": {\n        \"registry\": \""+reg.URL+"\",\n        \"name\": \"io.github.brave/brave-search-mcp-server\",\n        \"version\": \"2.1.3\"") {
		t.Errorf("servers --json: exit %d\n%s", code, stdout)
	}

	// A remote with a secret header.
	if code, stdout, stderr = asUser(t, home, "add", "hybrid", "--from-registry", "io.modelcontextprotocol.anonymous/hybrid-mcp", "--package", "remote", "--registry-url", reg.URL); code != 0 ||
		!strings.Contains(stdout, "HYBRID_X_API_KEY (header X-API-Key, secret)") {
		t.Fatalf("add remote: exit %d\n%s%s", code, stdout, stderr)
	}

	// Refusals and failures: the registry stays as it was, byte for byte.
	before := mustRead(t, path)
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return "http://" + ln.Addr().String()
	}()
	for _, tc := range []struct {
		name string
		fail func(w http.ResponseWriter, r *http.Request)
		url  string
		args []string
		code int
		want []string
	}{
		{"OCI", nil, reg.URL, []string{"db", "--from-registry", "io.github.example/database-manager"}, 2, []string{"colibri runs no containers; it offers no npm or PyPI package or remote", "nothing written"}},
		{"unknown name", nil, reg.URL, []string{"w", "--from-registry", "io.github.example/weather"}, 1, []string{"/v0.1/servers/io.github.example%2Fweather/versions/latest", "did you mean io.github.example/weather-mcp"}},
		{"a missing argument", nil, reg.URL, []string{"fs", "--from-registry", "io.github.modelcontextprotocol/filesystem"}, 2, []string{"--arg target_dir=VALUE"}},
		{"a name taken", nil, reg.URL, []string{"brave", "--from-registry", "io.github.brave/brave-search-mcp-server"}, 2, []string{"--replace"}},
		{"500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", 500) }, reg.URL, []string{"x", "--from-registry", "io.github.brave/brave-search-mcp-server"}, 1, []string{reg.URL + "/v0.1/servers/", "500 Internal Server Error"}},
		{"malformed", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"server":`)) }, reg.URL, []string{"x", "--from-registry", "io.github.brave/brave-search-mcp-server"}, 1, []string{reg.URL + "/v0.1/servers/", "not JSON"}},
		{"404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, reg.URL, []string{"x", "--from-registry", "io.github.brave/brave-search-mcp-server"}, 1, []string{reg.URL + "/v0.1/servers/", "404 Not Found"}},
		{"closed port", nil, closed, []string{"x", "--from-registry", "io.github.brave/brave-search-mcp-server"}, 1, []string{closed + "/v0.1/servers/", "connection refused"}},
		{"plain http", nil, "http://registry.example.com", []string{"x", "--from-registry", "io.github.brave/brave-search-mcp-server"}, 2, []string{"want https://"}},
		{"a command too", nil, reg.URL, []string{"x", "--from-registry", "io.github.brave/brave-search-mcp-server", "--", "npx"}, 2, []string{"NAME only"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg.Fail(tc.fail)
			defer reg.Fail(nil)
			code, stdout, stderr := asUser(t, home, append(append([]string{"add"}, tc.args...), "--registry-url", tc.url)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if after := mustRead(t, path); after != before {
				t.Errorf("the registry changed:\n%s", after)
			}
		})
	}
}

// add --from-registry takes add's other flags as add NAME -- COMMAND does:
// a sandbox, spares, pass_env, a description, a working folder are
// written into the entry, never dropped (the first-hour trial found
// --sandbox --write DIR --no-net ignored: the server ran unconfined), and
// a remote refuses the command's flags, nothing written.
func TestAddFromRegistryTakesAddsFlags(t *testing.T) {
	reg := registrytest.New(t, registrytest.Docs(t, "../../testdata/mcpregistry")...)
	home := t.TempDir()
	path := filepath.Join(home, "cfg", "colibri", "external-mcp.json")
	if code, _, stderr := asUser(t, home, "init"); code != 0 {
		t.Fatalf("init: %s", stderr)
	}
	dir := t.TempDir()
	code, stdout, stderr := asUser(t, home, "add", "fs", "--from-registry", "io.github.modelcontextprotocol/filesystem", "--registry-url", reg.URL,
		"--arg", "target_dir="+dir, "--sandbox", "--write", dir, "--no-net", "--spare", "1", "--pass-env", "HTTPS_PROXY",
		"--description", "my files", "--cwd", dir)
	if code != 0 {
		t.Fatalf("add: exit %d\n%s%s", code, stdout, stderr)
	}
	got := mustRead(t, path)
	for _, want := range []string{`"sandbox": {`, `"write": [`, `"net": false`, `"spare": 1`, `"pass_env": [`, `"HTTPS_PROXY"`,
		`"description": "my files"`, `"cwd": "` + dir + `"`, `"version": "1.0.2"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the registry does not hold %s:\n%s", want, got)
		}
	}
	if strings.Contains(stdout, `"spare": 1 in the entry`) || strings.Contains(stdout, "pass_env") {
		t.Errorf("add hints at what the entry has already:\n%s", stdout)
	}
	code, stdout, _ = asUser(t, home, "servers")
	if code != 0 || !regexpLine(stdout, `^fs\s.*sandboxed\s+my files \[io.github.modelcontextprotocol/filesystem@1.0.2\]`) || !regexpLine(stdout, `^SERVER\s.*\sJAIL or SANDBOX\s`) {
		t.Errorf("servers: exit %d\n%s", code, stdout)
	}

	before := mustRead(t, path)
	for _, flags := range [][]string{{"--sandbox"}, {"--spare", "1"}, {"--cwd", dir}, {"--pass-env", "HTTPS_PROXY"}} {
		code, stdout, stderr = asUser(t, home, append([]string{"add", "hy", "--from-registry", "io.modelcontextprotocol.anonymous/hybrid-mcp",
			"--package", "remote", "--registry-url", reg.URL}, flags...)...)
		if code != 2 || !strings.Contains(stderr, "for a command: colibri starts no process for a remote server") || !strings.Contains(stderr, "nothing written") {
			t.Errorf("add remote %v: exit %d\n%s%s", flags, code, stdout, stderr)
		}
	}
	if code, stdout, stderr = asUser(t, home, "add", "fs2", "--from-registry", "io.github.modelcontextprotocol/filesystem", "--registry-url", reg.URL,
		"--arg", "target_dir="+dir, "--no-net", "--net", "example.com"); code != 2 || !strings.Contains(stderr, "--no-net or --net") {
		t.Errorf("add --no-net --net: exit %d\n%s%s", code, stdout, stderr)
	}
	if after := mustRead(t, path); after != before {
		t.Errorf("a refused add changed the registry:\n%s", after)
	}
}

// regexpLine reports whether a line of s matches re.
func regexpLine(s, re string) bool {
	return regexp.MustCompile(`(?m)` + re).MatchString(s)
}

// --arg NAME=~/DIR is home's folder, as the shell makes ~/DIR of a word of
// its own: after NAME= the shell leaves it, and the registry passes args
// as they are (the first-hour trial wrote a literal "~/src").
func TestAddFromRegistryArgHome(t *testing.T) {
	reg := registrytest.New(t, registrytest.Docs(t, "../../testdata/mcpregistry")...)
	home := t.TempDir()
	path := filepath.Join(home, "cfg", "colibri", "external-mcp.json")
	if code, _, stderr := asUser(t, home, "init"); code != 0 {
		t.Fatalf("init: %s", stderr)
	}
	code, stdout, stderr := asUser(t, home, "add", "fs", "--from-registry", "io.github.modelcontextprotocol/filesystem", "--registry-url", reg.URL, "--arg", "target_dir=~/src")
	if code != 0 {
		t.Fatalf("add: exit %d\n%s%s", code, stdout, stderr)
	}
	if got := mustRead(t, path); !strings.Contains(got, `"`+home+`/src"`) || strings.Contains(got, `"~/src"`) {
		t.Errorf("registry:\n%s", got)
	}
	for _, tc := range [][2]string{{"~", "/h"}, {"~/a", "/h/a"}, {"~x/a", "~x/a"}, {"a~/b", "a~/b"}, {"/abs", "/abs"}} {
		if got := homeExpanded(tc[0], "/h/"); got != tc[1] {
			t.Errorf("homeExpanded(%q) = %q, want %q", tc[0], got, tc[1])
		}
	}
}
