package host_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// fakeJexec records its argv (NUL-separated) and plays jexec(8) in place:
// "-d DIR" becomes the working directory, "-U USER" is skipped.
const fakeJexec = `#!/bin/sh
# usage: jexec [-l] [-d working-directory] [[-u username] | [-U username]] jail [command ...]
printf '%s\0' jexec "$@" > "$FAKE_JAIL_RECORD"
while [ $# -gt 0 ]; do
	case "$1" in
	-d) cd "$2" || exit 71; shift 2 ;;
	-U) shift 2 ;;
	*) break ;;
	esac
done
shift
exec "$@"
`

// cwd with jail.name runs "jexec -d CWD NAME COMMAND ARGS…" (docs/freebsd.md#confining-hosted-servers-in-jails): the directory goes to jexec, never to the process colibri
// starts (whose working directory would be a host path).
func TestJailNameWithCwd(t *testing.T) {
	dir := t.TempDir()
	bin, record, cwd := filepath.Join(dir, "bin"), filepath.Join(dir, "argv"), filepath.Join(dir, "inside the jail")
	os.Mkdir(bin, 0o755)
	os.Mkdir(cwd, 0o755)
	if err := os.WriteFile(filepath.Join(bin, "jexec"), []byte(fakeJexec), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, host.Options{})
	srv := &registry.Server{Name: "jailed", Command: fakeBin, Args: []string{"ok"}, Cwd: cwd,
		Env:  map[string]string{"PATH": bin + ":/usr/bin:/bin", "FAKE_JAIL_RECORD": record},
		Jail: &registry.Jail{Name: "mcp0", User: "mcp"}}
	if err := (&registry.Registry{Servers: map[string]*registry.Server{"jailed": srv}}).Validate(); err != nil {
		t.Fatalf("the registry refuses cwd with jail.name: %v", err)
	}
	res, err := h.CallTool(t.Context(), srv, "cwd", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != cwd {
		t.Errorf("the server ran in %q, want %q", got, cwd)
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	want := []string{"jexec", "-d", cwd, "-U", "mcp", "mcp0", fakeBin, "ok"}
	if !slices.Equal(got, want) {
		t.Errorf("argv\n got %q\nwant %q", got, want)
	}
}

// An older jexec(8), without -d: cwd with jail.name is a jail error that
// says so, found before anything starts.
func TestJailCwdNeedsJexecD(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	older := strings.Replace(fakeJexec, "[-d working-directory] ", "", 1)
	if err := os.WriteFile(filepath.Join(bin, "jexec"), []byte(older), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, host.Options{})
	srv := &registry.Server{Name: "jailed", Command: fakeBin, Args: []string{"ok"}, Cwd: "/srv",
		Env:  map[string]string{"PATH": bin + ":/usr/bin:/bin", "FAKE_JAIL_RECORD": filepath.Join(dir, "argv")},
		Jail: &registry.Jail{Name: "mcp0"}}
	_, err := h.ListTools(t.Context(), srv, nil)
	e := wantKind(t, err, failure.KindJail, failure.PhaseSpawn)
	if !strings.Contains(e.Error(), "-d") || !strings.Contains(e.Error(), "release") {
		t.Errorf("message %q should say the release's jexec lacks -d", e.Error())
	}
	if n := len(h.spawned()); n != 0 {
		t.Errorf("%d processes started, want none", n)
	}
}
