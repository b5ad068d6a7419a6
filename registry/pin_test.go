package registry_test

import (
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// "pin" top-level and per server (docs/registry.md and docs/cli.md#pinned-tool-definitions): a
// server's own replaces the top-level one; the default is enforce; a value
// that is not enforce, warn or off is an error at its location.
func TestPinKey(t *testing.T) {
	reg, err := registry.Parse(strings.NewReader(`{"pin": "warn", "servers": {
		"a": {"command": "/bin/a"},
		"b": {"command": "/bin/b", "pin": "off"},
		"c": {"command": "/bin/c", "pin": "enforce"}}}`), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "warn", "b": "off", "c": "enforce"} {
		if got := reg.PinMode(reg.Servers[name]); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	reg, _ = registry.Parse(strings.NewReader(`{"servers": {"a": {"command": "/bin/a"}}}`), "r.json")
	if got := reg.PinMode(reg.Servers["a"]); got != registry.PinEnforce {
		t.Errorf("default: %q", got)
	}
	_, err = registry.Parse(strings.NewReader(`{"servers": {"a": {"command": "/bin/a", "pin": "loose"}}}`), "r.json")
	if err == nil || !strings.Contains(err.Error(), "/servers/a/pin") {
		t.Errorf("a bad pin: %v", err)
	}
	if got := (&registry.Registry{Pin: "loose"}).PinMode(nil); got != registry.PinEnforce {
		t.Errorf("an unknown mode in code: %q, want enforce", got)
	}
}
