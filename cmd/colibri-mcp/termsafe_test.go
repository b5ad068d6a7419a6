package main

import (
	"strings"
	"testing"
)

// Hosted tool names and descriptions, and a server's stderr, reach the
// terminal without their escape sequences, through every text command.
func TestCLIPrintsNoEscapeSequences(t *testing.T) {
	reg := writeRegistry(t, registryDoc{
		"evil":  {"command": fakeBin, "args": []string{"escapes"}, "description": "registry \x1b[31mred"},
		"dying": {"command": fakeBin, "args": []string{"escapes-dying"}},
	})
	environ := []string{"PATH=/usr/bin:/bin", "E2E_SECRET=x", pinEnv(t)}
	for _, args := range [][]string{
		{"servers"}, {"list-tools"}, {"list-tools", "evil"}, {"list-tools", "dying"},
		{"check", "--probe"}, {"describe", "evil", "esc\x1b]0;t\x07"},
		{"call", "evil", "esc\x1b]0;t\x07", "--external-call"},
	} {
		var stdout, stderr lockedWriter
		stdout.w, stderr.w = &strings.Builder{}, &strings.Builder{}
		run(t.Context(), append([]string{"colibri-mcp", "--external-config", reg}, args...), strings.NewReader(""), &stdout, &stderr, environ)
		all := stdout.String() + stderr.String()
		if strings.ContainsAny(all, "\x1b\x07\u009b") {
			t.Errorf("%v printed a raw escape sequence:\n%q", args, all)
		}
		// Shown escaped: by the terminal guard, or quoted (a name that
		// breaks SEP-986 is refused by name, %q in the message).
		if !strings.Contains(all, `\u001b`) && !strings.Contains(all, `\x1b`) {
			t.Errorf("%v printed nothing of the hostile text (escaped):\n%q", args, all)
		}
	}
}
