package main

import (
	"strings"
	"testing"
)

// The auth commands' usage errors: exit 2, one line on stderr that says
// what to do. (Their work is tested in internal/oauth against a real
// authorization server.)
func TestAuthUsageErrors(t *testing.T) {
	reg := writeRegistry(t, nil)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"auth"}, "auth needs a command: login, status or logout"},
		{[]string{"auth", "lgin", "demo"}, `auth: unknown command "lgin": did you mean "login"?`},
		{[]string{"auth", "login"}, "login needs SERVER, got 0 arguments"},
		{[]string{"auth", "status", "dmeo"}, `unknown server "dmeo" in ` + reg + `: did you mean "demo"?`},
		{[]string{"auth", "login", "demo"}, `server "demo" is not a remote server (no url): there is nothing to log in to`},
		{[]string{"auth", "logout", "demo"}, `server "demo" is not a remote server`},
		{[]string{"auth", "login", "demo", "--wait", "soon"}, "--wait:"},
	} {
		code, stdout, stderr := runHere(t, nil, append([]string{"--external-config", reg}, tc.args...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.says) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line with %q", tc.args, code, stdout, stderr, tc.says)
		}
	}
	if code, stdout, _ := runHere(t, nil, "help", "auth"); code != 0 || !strings.Contains(stdout, "login|status|logout SERVER") || !strings.Contains(stdout, "colibri-mcp auth login github --open") {
		t.Errorf("help auth: exit %d:\n%s", code, stdout)
	}
}
