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

// "pin_resources" per server (docs/registry.md): off by default, true
// where the entry says so; anything but a boolean is an error at its
// location.
func TestPinResourcesKey(t *testing.T) {
	reg, err := registry.Parse(strings.NewReader(`{"servers": {
		"a": {"command": "/bin/a"},
		"b": {"command": "/bin/b", "pin_resources": true}}}`), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	if reg.Servers["a"].PinResources || !reg.Servers["b"].PinResources {
		t.Errorf("pin_resources: a %v, b %v; want false, true", reg.Servers["a"].PinResources, reg.Servers["b"].PinResources)
	}
	_, err = registry.Parse(strings.NewReader(`{"servers": {"a": {"command": "/bin/a", "pin_resources": "yes"}}}`), "r.json")
	if err == nil || !strings.Contains(err.Error(), "/servers/a/pin_resources") {
		t.Errorf("a pin_resources that is not a boolean: %v", err)
	}
}

// "pin": "locked" at the top level (docs/security.md, locked pins):
// enforce, with the pin file a lock; a server's own pin may then be warn
// or off only; at a server, locked is no value.
func TestPinLocked(t *testing.T) {
	reg, err := registry.Parse(strings.NewReader(`{"pin": "locked", "servers": {
		"a": {"command": "/bin/a"},
		"b": {"command": "/bin/b", "pin": "warn"}}}`), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reg.Locked() || reg.PinMode(reg.Servers["a"]) != registry.PinEnforce || reg.PinMode(reg.Servers["b"]) != registry.PinWarn {
		t.Errorf("locked: %v, a %q, b %q", reg.Locked(), reg.PinMode(reg.Servers["a"]), reg.PinMode(reg.Servers["b"]))
	}
	_, err = registry.Parse(strings.NewReader(`{"pin": "locked", "servers": {"a": {"command": "/bin/a", "pin": "enforce"}}}`), "r.json")
	if err == nil || !strings.Contains(err.Error(), "/servers/a/pin") || !strings.Contains(err.Error(), `may only be "warn" or "off"`) {
		t.Errorf("enforce under locked: %v", err)
	}
	_, err = registry.Parse(strings.NewReader(`{"servers": {"a": {"command": "/bin/a", "pin": "locked"}}}`), "r.json")
	if err == nil || !strings.Contains(err.Error(), "/servers/a/pin") {
		t.Errorf("locked at a server: %v", err)
	}
}

// An entry's fingerprint covers what runs, as written, after the
// top-level defaults: a change of args, command, url, cwd, jail, sandbox,
// an env or header name, or a ${NAME} or plain value, changes it, naming
// the member; a secret's value never counts (it never reaches a pin
// file), nor does what does not say what runs (description, timeouts).
func TestEntryFingerprint(t *testing.T) {
	fp := func(doc string) *registry.EntryFingerprint {
		t.Helper()
		reg, err := registry.Parse(strings.NewReader(doc), "/etc/r.json")
		if err != nil {
			t.Fatal(err)
		}
		return reg.Servers["a"].Fingerprint()
	}
	base := fp(`{"servers": {"a": {"command": "npx", "args": ["-y", "pkg@1"], "env": {"MODE": "x", "API_TOKEN": "literal-secret-1", "REF": "${REF}"}}}}`)
	same := []string{
		`{"servers": {"a": {"command": "npx", "args": ["-y", "pkg@1"], "env": {"REF": "${REF}", "API_TOKEN": "literal-secret-2", "MODE": "x"}, "description": "other", "timeout_ms": 5}}}`,
	}
	for _, doc := range same {
		if got := fp(doc); got.Digest != base.Digest {
			t.Errorf("%s: fingerprint changed (%v vs %v)", doc, got.Fields, base.Fields)
		}
	}
	changed := map[string]string{
		"args":    `{"servers": {"a": {"command": "npx", "args": ["-y", "pkg@2"], "env": {"MODE": "x", "API_TOKEN": "literal-secret-1", "REF": "${REF}"}}}}`,
		"command": `{"servers": {"a": {"command": "bunx", "args": ["-y", "pkg@1"], "env": {"MODE": "x", "API_TOKEN": "literal-secret-1", "REF": "${REF}"}}}}`,
		"env":     `{"servers": {"a": {"command": "npx", "args": ["-y", "pkg@1"], "env": {"MODE": "y", "API_TOKEN": "literal-secret-1", "REF": "${REF}"}}}}`,
		"sandbox": `{"sandbox": {"net": false}, "servers": {"a": {"command": "npx", "args": ["-y", "pkg@1"], "env": {"MODE": "x", "API_TOKEN": "literal-secret-1", "REF": "${REF}"}}}}`,
		"cwd":     `{"servers": {"a": {"command": "npx", "cwd": "/srv", "args": ["-y", "pkg@1"], "env": {"MODE": "x", "API_TOKEN": "literal-secret-1", "REF": "${REF}"}}}}`,
	}
	for member, doc := range changed {
		got := fp(doc)
		if got.Digest == base.Digest || got.Fields[member] == base.Fields[member] {
			t.Errorf("%s changed: fingerprint %v, fields %v", member, got.Digest == base.Digest, got.Fields)
		}
	}
	if fp(`{"servers": {"a": {"command": "npx", "env": {"GH": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}}}}`).Digest !=
		fp(`{"servers": {"a": {"command": "npx", "env": {"GH": "ghp_zyxwvutsrqponmlkjihgfedcba9876543210"}}}}`).Digest {
		t.Error("a token-looking value under a plain name counts")
	}
	// A secret beside a reference, a URL's password, a password under a
	// name SecretName does not know: none counts (a pin file holds no
	// digest of one); a reference with its scheme word does.
	for _, pair := range [][2]string{
		{`"env": {"K": "sk-live-abc${X}"}`, `"env": {"K": "sk-live-xyz${X}"}`},
		{`"env": {"DATABASE_URL": "postgres://app:hunter2@db/app"}`, `"env": {"DATABASE_URL": "postgres://app:swordfish@db/app"}`},
		{`"env": {"DB_PASS": "hunter2"}`, `"env": {"DB_PASS": "swordfish"}`},
		{`"headers": {"X-Auth": "Bearer abc123def456 ${X}"}`, `"headers": {"X-Auth": "Bearer zzz999yyy888 ${X}"}`},
	} {
		where := `"command": "npx", `
		if strings.Contains(pair[0], "headers") {
			where = `"url": "https://h/mcp", `
		}
		a := fp(`{"servers": {"a": {` + where + pair[0] + `}}}`)
		b := fp(`{"servers": {"a": {` + where + pair[1] + `}}}`)
		if a.Digest != b.Digest {
			t.Errorf("%s and %s: the secret counts in the fingerprint", pair[0], pair[1])
		}
	}
	if fp(`{"servers": {"a": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${A}"}}}}`).Digest ==
		fp(`{"servers": {"a": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${B}"}}}}`).Digest {
		t.Error("a reference under a secret name does not count")
	}
}

// An entry that runs a package runner on a package with no version cannot
// tell an upgrade from a change (its entry stays the same).
func TestUnversionedPackage(t *testing.T) {
	for _, c := range []struct {
		command string
		args    []string
		want    string
	}{
		{"npx", []string{"-y", "@modelcontextprotocol/server-memory"}, "@modelcontextprotocol/server-memory"},
		{"npx", []string{"-y", "@modelcontextprotocol/server-memory@2026.1.1"}, ""},
		{"/usr/bin/npx", []string{"--yes", "mcp-server-x"}, "mcp-server-x"},
		{"npx", []string{"mcp-server-x@1.0.0"}, ""},
		{"npx", []string{"-y", "--package", "pkg", "bin"}, "pkg"},
		{"uvx", []string{"mcp-server-fetch"}, "mcp-server-fetch"},
		{"uvx", []string{"mcp-server-fetch==1.2"}, ""},
		{"pnpm", []string{"dlx", "pkg"}, "pkg"},
		{"node", []string{"server.js"}, ""},
		{"npx", []string{"./local"}, ""},
	} {
		s := &registry.Server{Command: c.command, Args: c.args}
		if got := s.UnversionedPackage(); got != c.want {
			t.Errorf("%s %v: %q, want %q", c.command, c.args, got, c.want)
		}
	}
}

// "pin_scan" top-level and per server: warn by default, a server's own
// replacing the top-level one; anything but warn, block or off is an
// error at its location.
func TestPinScanKey(t *testing.T) {
	reg, err := registry.Parse(strings.NewReader(`{"pin_scan": "block", "servers": {
		"a": {"command": "/bin/a"},
		"b": {"command": "/bin/b", "pin_scan": "off"}}}`), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	if reg.PinScanMode(reg.Servers["a"]) != registry.ScanBlock || reg.PinScanMode(reg.Servers["b"]) != registry.ScanOff {
		t.Errorf("pin_scan: a %q, b %q", reg.PinScanMode(reg.Servers["a"]), reg.PinScanMode(reg.Servers["b"]))
	}
	reg, _ = registry.Parse(strings.NewReader(`{"servers": {"a": {"command": "/bin/a"}}}`), "r.json")
	if reg.PinScanMode(reg.Servers["a"]) != registry.ScanWarn {
		t.Errorf("default: %q", reg.PinScanMode(reg.Servers["a"]))
	}
	_, err = registry.Parse(strings.NewReader(`{"servers": {"a": {"command": "/bin/a", "pin_scan": "loud"}}}`), "r.json")
	if err == nil || !strings.Contains(err.Error(), "/servers/a/pin_scan") {
		t.Errorf("a bad pin_scan: %v", err)
	}
}
