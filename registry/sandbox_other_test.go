//go:build !linux

package registry_test

import (
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Off Linux, "sandbox" is a config error that says so, once for a
// top-level one; on FreeBSD the jail is the sandbox.
func TestSandboxOffLinux(t *testing.T) {
	for doc, want := range map[string]string{
		`{"servers": {"a": {"command": "/bin/true", "sandbox": {}}}}`:                                "/servers/a/sandbox: \"sandbox\" is Linux confinement",
		`{"sandbox": {}, "servers": {"a": {"command": "/bin/true"}, "b": {"command": "/bin/true"}}}`: "/sandbox: \"sandbox\" is Linux confinement",
	} {
		_, err := registry.Parse(strings.NewReader(doc), "r.json")
		if err == nil || strings.Count(err.Error(), want) != 1 {
			t.Errorf("%s: err = %v, want %q once", doc, err, want)
		}
	}
}
