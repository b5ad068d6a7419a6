package importcmd

import "testing"

// A binary of go run's is deleted when it exits: import --apply must not
// write it into the editor's file, nor init offer it without a word.
func TestTransientBuild(t *testing.T) {
	for p, want := range map[string]bool{
		"/tmp/go-build318664719/b001/exe/colibri-mcp":  true,
		"/home/me/.cache/go-build/x/exe/colibri-mcp":   true,
		"/usr/local/bin/colibri-mcp":                   false,
		"/tmp/go-build318664719/b001/colibri-mcp.test": false, // a test binary: the tests' own
		"/home/me/src/colibri-mcp/bin/colibri-mcp":     false,
		"/home/me/exe/colibri-mcp":                     false,
	} {
		if got := TransientBuild(p); got != want {
			t.Errorf("TransientBuild(%q) = %v, want %v", p, got, want)
		}
	}
}
