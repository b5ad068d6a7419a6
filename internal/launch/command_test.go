package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/jail"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// executables writes a do-nothing executable of each name into a new
// folder, and returns the folder.
func executables(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Command builds, for each kind of entry, exactly the argv, environment
// and working directory the child is started with, and the secrets that
// ${NAME} put into it; or fails, before anything runs, with the exact kind
// of what is wrong.
func TestCommand(t *testing.T) {
	bin := executables(t, "srv", "jexec", "jail")
	cwd := t.TempDir()
	environ := []string{"PATH=" + bin, "HOME=/home/u", "EDITOR=vi", "TOKEN=tok-s3cr3t"}
	ephemeral := fmt.Sprintf("name=colibri_%d_1", os.Getpid())
	for _, tc := range []struct {
		name     string
		srv      registry.Server
		environ  []string
		priv     jail.Priv
		argv     []string
		env      []string
		dir      string
		kind     failure.Kind // "" when it builds
		says     string       // in the error
		hint     string       // in the error's hint
		redacted string       // what the secrets hide
	}{
		{name: "plain, found on the child's PATH, in the registry's folder",
			srv:  registry.Server{Command: "srv", Args: []string{"--stdio", "-v"}, Env: map[string]string{"API_KEY": "${TOKEN}"}, Dir: "/etc/colibri"},
			argv: []string{bin + "/srv", "--stdio", "-v"}, env: []string{"PATH=" + bin, "HOME=/home/u", "API_KEY=tok-s3cr3t"}, dir: "/etc/colibri",
			redacted: "tok-s3cr3t"},
		{name: "plain, absolute, in its cwd",
			srv:  registry.Server{Command: bin + "/srv", Cwd: cwd, Dir: "/etc/colibri"},
			argv: []string{bin + "/srv"}, env: []string{"PATH=" + bin, "HOME=/home/u"}, dir: cwd},
		{name: "jail by name: jexec as the user, no host folder",
			srv:  registry.Server{Command: "/usr/local/bin/srv", Args: []string{"--stdio"}, Jail: &registry.Jail{Name: "mcp0", User: "mcp"}, Dir: "/etc/colibri"},
			argv: []string{bin + "/jexec", "-U", "mcp", "mcp0", "/usr/local/bin/srv", "--stdio"}, env: []string{"PATH=" + bin, "HOME=/home/u"}},
		{name: "ephemeral jail: jail -q -c, named for this process",
			srv:  registry.Server{Command: "/usr/local/bin/srv", Args: []string{"--stdio"}, Jail: &registry.Jail{Path: "/jails/j", IP4: "10.0.0.2"}},
			argv: []string{bin + "/jail", "-q", "-c", ephemeral, "path=/jails/j", "ip4.addr=10.0.0.2", "command=/usr/local/bin/srv", "--stdio"},
			env:  []string{"PATH=" + bin, "HOME=/home/u"}},
		{name: "jail through mdo, not installed",
			srv: registry.Server{Command: "/usr/local/bin/srv", Jail: &registry.Jail{Name: "mcp0"}}, priv: jail.PrivMdo,
			kind: failure.KindJail, says: `"mdo": executable file not found`, hint: "the jail tools must be on the child's PATH"},
		{name: "a missing ${NAME}",
			srv:  registry.Server{Command: "srv", Env: map[string]string{"API_KEY": "${MISSING}"}},
			kind: failure.KindConfig, says: "env API_KEY: ${MISSING} refers to a variable that is not set in colibri's environment",
			hint: "--env-file F (COLIBRI_MCP_ENV_FILE)"},
		{name: "a command not on the child's PATH",
			srv:     registry.Server{Command: "srv"},
			environ: []string{"PATH=/nonexistent", "HOME=/home/u"},
			kind:    failure.KindSpawn, says: `"srv": executable file not found`},
		{name: "a cwd that is no folder",
			srv:  registry.Server{Command: "srv", Cwd: bin + "/srv"},
			kind: failure.KindSpawn, says: "cwd " + bin + "/srv is not a directory"},
		{name: "a jail name jexec cannot take",
			srv:  registry.Server{Command: "/usr/local/bin/srv", Jail: &registry.Jail{Name: "mcp 0"}},
			kind: failure.KindJail, says: `jail name "mcp 0"`},
		{name: "a sandbox without the launcher",
			srv:  registry.Server{Command: "srv", Sandbox: &registry.Sandbox{}},
			kind: failure.KindSandbox, says: "no sandbox launcher"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := environ
			if tc.environ != nil {
				env = tc.environ
			}
			b := New(Config{Environ: func() []string { return env }, JailPriv: tc.priv, StateDir: t.TempDir()})
			srv := tc.srv
			srv.Name = "s"
			cmd, secrets, err := b.Command(&srv)
			if tc.kind != "" {
				var e *failure.Error
				if !errors.As(err, &e) {
					t.Fatalf("err = %v, want a %s failure", err, tc.kind)
				}
				if e.Kind != tc.kind || e.Phase != failure.PhaseSpawn || e.Server != "s" || !strings.Contains(e.Err.Error(), tc.says) || !strings.Contains(e.Hint, tc.hint) {
					t.Errorf("kind %s, phase %s: %v (hint %q); want %s at spawn saying %q (hint %q)", e.Kind, e.Phase, e.Err, e.Hint, tc.kind, tc.says, tc.hint)
				}
				if e.Retry.Transient {
					t.Errorf("a %s failure is transient: it would be retried", e.Kind)
				}
				if cmd != nil {
					t.Errorf("a command was built")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cmd.Path != tc.argv[0] || !slices.Equal(cmd.Args, tc.argv) {
				t.Errorf("path %s, argv %q; want %q", cmd.Path, cmd.Args, tc.argv)
			}
			if !slices.Equal(cmd.Env, tc.env) {
				t.Errorf("env %q, want %q", cmd.Env, tc.env)
			}
			if cmd.Dir != tc.dir {
				t.Errorf("dir %q, want %q", cmd.Dir, tc.dir)
			}
			if cmd.Process != nil {
				t.Errorf("the command was started")
			}
			shown := secrets.Apply("key " + tc.redacted)
			if tc.redacted != "" && strings.Contains(shown, tc.redacted) {
				t.Errorf("the secrets do not hide %q: %q", tc.redacted, shown)
			}
		})
	}
}
