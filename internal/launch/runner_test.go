package launch

import (
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

func TestRunnerHint(t *testing.T) {
	off := false
	for _, tc := range []struct {
		srv      registry.Server
		timedOut bool
		want     string // "" for no hint
	}{
		{registry.Server{Command: "npx"}, true, "npx may be downloading the package"},
		{registry.Server{Command: "/usr/local/bin/uvx"}, true, "uv tool install PKG==VERSION"},
		{registry.Server{Command: "pipx"}, true, "pipx install"},
		{registry.Server{Command: "npx", Sandbox: &registry.Sandbox{Net: &off}}, false, `sandbox has no network ("net": false)`},
		{registry.Server{Command: "npx"}, false, ""},
		// The package the entry names, not PKG@VERSION.
		{registry.Server{Command: "npx", Args: []string{"-y", "@brave/brave-search-mcp-server@2.1.3"}}, true,
			"npm install -g @brave/brave-search-mcp-server@2.1.3 (then make the entry run its binary), or run 'npx -y @brave/brave-search-mcp-server@2.1.3 --help' once"},
		{registry.Server{Command: "uvx", Args: []string{"weather-mcp-server@0.5.0"}}, true, "uv tool install weather-mcp-server==0.5.0 "},
		{registry.Server{Command: "uvx", Args: []string{"--from", "git+https://example.com/x", "x"}}, true, "uv tool install PKG==VERSION "},
		// Sandboxed, the server's HOME is its own: filling the cache in
		// colibri's is no way (the first-hour trial).
		{registry.Server{Command: "npx", Args: []string{"-y", "pkg@1.0.0"}, Sandbox: &registry.Sandbox{Net: &off}}, false,
			`install it in advance, npm install -g pkg@1.0.0 (then make the entry run its binary); or let the sandbox reach the package registry for a start, its private HOME`},
		{registry.Server{Command: "/usr/bin/github-mcp-server"}, true, ""},
	} {
		got := RunnerHint(&tc.srv, tc.timedOut)
		if tc.srv.Sandbox != nil && strings.Contains(got, "once where colibri runs") {
			t.Errorf("%s sandboxed: told to fill the cache of colibri's HOME: %q", tc.srv.Command, got)
		}
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s (timed out %v, sandbox %+v): %q, want %q", tc.srv.Command, tc.timedOut, tc.srv.Sandbox, got, tc.want)
		}
	}
}

func TestSandboxDeniedHint(t *testing.T) {
	sb := &registry.Sandbox{}
	for _, tc := range []struct {
		srv  registry.Server
		tail string
		want bool
	}{
		{registry.Server{Command: "node", Sandbox: sb}, "Error: EACCES: permission denied, open '/home/me/.config/x.json'", true},
		{registry.Server{Command: "python3", Sandbox: sb}, "PermissionError: [Errno 13] Permission denied: '/data'", true},
		{registry.Server{Command: "node"}, "Error: EACCES: permission denied", false},
		{registry.Server{Command: "node", Sandbox: &registry.Sandbox{Off: true}}, "EACCES", false},
		{registry.Server{Command: "node", Sandbox: sb}, "Error: no API key", false},
	} {
		if got := SandboxDeniedHint(&tc.srv, tc.tail) != ""; got != tc.want {
			t.Errorf("%+v, %q: hint %v, want %v", tc.srv.Sandbox, tc.tail, got, tc.want)
		}
	}
}
