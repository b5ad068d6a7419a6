package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// Fake jail tools: each records its argv (NUL-separated, one file per tool
// and pid: mdo and the helper exec jexec under the same pid) and then runs
// the rest as the real tool would.
var fakeJailTools = map[string]string{
	// jexec [-U user] jail command ...: runs the command in place.
	"jexec": `#!/bin/sh
printf '%s\0' jexec "$@" > "$FAKE_JAIL_RECORD-tmp.$$" && mv "$FAKE_JAIL_RECORD-tmp.$$" "$FAKE_JAIL_RECORD.jexec.$$"
if [ "$1" = "-U" ]; then shift 2; fi
shift
exec "$@"
`,
	// jail -q -c [-U user] param=value ... command=CMD ARGS: forks the
	// command and waits for it, so the hosted server is a grandchild of
	// colibri. jail -r NAME: recorded, nothing else.
	"jail": `#!/bin/sh
printf '%s\0' jail "$@" > "$FAKE_JAIL_RECORD-tmp.$$" && mv "$FAKE_JAIL_RECORD-tmp.$$" "$FAKE_JAIL_RECORD.jail.$$"
if [ "$1" = "-r" ]; then exit 0; fi
while [ $# -gt 0 ]; do
	case "$1" in
	command=*) cmd="${1#command=}"; shift; break ;;
	*) shift ;;
	esac
done
"$cmd" "$@"
exit $?
`,
	"mdo": `#!/bin/sh
printf '%s\0' mdo "$@" > "$FAKE_JAIL_RECORD-tmp.$$" && mv "$FAKE_JAIL_RECORD-tmp.$$" "$FAKE_JAIL_RECORD.mdo.$$"
exec "$@"
`,
	"colibri-jail-helper": `#!/bin/sh
printf '%s\0' "$0" "$@" > "$FAKE_JAIL_RECORD-tmp.$$" && mv "$FAKE_JAIL_RECORD-tmp.$$" "$FAKE_JAIL_RECORD.helper.$$"
exec "$@"
`,
}

type jailFixture struct {
	bin    string // the fake tools
	record string // record file prefix
}

func newJailFixture(t *testing.T) *jailFixture {
	t.Helper()
	dir := t.TempDir()
	f := &jailFixture{bin: filepath.Join(dir, "bin"), record: filepath.Join(dir, "rec")}
	os.Mkdir(f.bin, 0o755)
	for name, script := range fakeJailTools {
		if err := os.WriteFile(filepath.Join(f.bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// env is a registry entry's env that puts the fakes first on the child's PATH.
func (f *jailFixture) env() map[string]any {
	return map[string]any{"PATH": f.bin + ":/usr/local/bin:/usr/bin:/bin", "FAKE_JAIL_RECORD": f.record}
}

type recorded struct {
	pid  int
	argv []string
}

// take returns the argv each fake recorded since the last take. The fakes
// write each record beside its name and rename it into place, so that a
// take never reads one half written (and loses it).
func (f *jailFixture) take(t *testing.T) []recorded {
	t.Helper()
	files, _ := filepath.Glob(f.record + ".*.*")
	var out []recorded
	for _, file := range files {
		b, _ := os.ReadFile(file)
		pid, _ := strconv.Atoi(strings.TrimPrefix(filepath.Ext(file), "."))
		out = append(out, recorded{pid, strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")})
		os.Remove(file)
	}
	return out
}

// The argv of every form of docs/freebsd.md#confining-hosted-servers-in-jails, recorded by the fakes,
// equals the contract's line exactly; list and call work through each; and
// nothing of the jail, grandchildren included, outlives the request.
func TestJailForms(t *testing.T) {
	t.Parallel() // a long test of its own process: it runs beside the others (docs/testing.md)
	f := newJailFixture(t)
	everything := everythingPath(t)
	helper := filepath.Join(f.bin, "colibri-jail-helper")
	cases := []struct {
		name   string
		priv   string
		jail   map[string]any
		server string // demo or everything
		want   []string
	}{
		{"jexec", "none", map[string]any{"name": "mcp0"}, "demo",
			[]string{"jexec", "mcp0", demoBin}},
		{"jexec -U", "none", map[string]any{"name": "mcp0", "user": "mcp"}, "everything",
			[]string{"jexec", "-U", "mcp", "mcp0", "node", everything, "stdio"}},
		{"jail -c", "none", map[string]any{"path": "/var/jails/mcp"}, "demo",
			[]string{"jail", "-q", "-c", ephemeralName, "path=/var/jails/mcp", "command=" + demoBin}},
		{"jail -c -U ip4", "none", map[string]any{"path": "/var/jails/mcp", "ip4": "10.0.0.5", "user": "mcp"}, "everything",
			[]string{"jail", "-q", "-c", "-U", "mcp", ephemeralName, "path=/var/jails/mcp", "ip4.addr=10.0.0.5", "command=node", everything, "stdio"}},
		{"mdo jexec", "mdo", map[string]any{"name": "mcp0"}, "demo",
			[]string{"mdo", "jexec", "mcp0", demoBin}},
		{"mdo jail -c", "mdo", map[string]any{"path": "/var/jails/mcp"}, "everything",
			[]string{"mdo", "jail", "-q", "-c", ephemeralName, "path=/var/jails/mcp", "command=node", everything, "stdio"}},
		{"helper jexec -U", "helper", map[string]any{"name": "mcp0", "user": "mcp"}, "demo",
			[]string{helper, "jexec", "-U", "mcp", "mcp0", demoBin}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entry := map[string]any{"command": demoBin, "env": f.env(), "jail": tc.jail}
			tool, args := "echo", map[string]any{"message": "jailed"}
			wantText := "Echo: jailed"
			if tc.server == "everything" {
				entry["command"], entry["args"] = "node", []string{everything, "stdio"}
			}
			cs := connect(t, writeRegistry(t, registryDoc{"jailed": entry}),
				"COLIBRI_MCP_EXTERNAL_CALL=1", "COLIBRI_JAIL_PRIV_MODE="+tc.priv, "COLIBRI_JAIL_HELPER="+helper)

			res := call(t, cs, "colibri_external_mcp_list_tools", map[string]any{"server": "jailed"})
			if res.IsError {
				b, _ := json.Marshal(res)
				t.Fatalf("list through %s: %s", tc.name, b)
			}
			checkRecorded(t, f, tc.want)

			res = call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "jailed", "name": tool, "arguments": args})
			if res.IsError || res.Content[0].(*mcp.TextContent).Text != wantText {
				b, _ := json.Marshal(res)
				t.Fatalf("call through %s: %s", tc.name, b)
			}
			checkRecorded(t, f, tc.want)
		})
	}
}

// checkRecorded asserts that the outermost wrapper ran exactly want, and
// that its process group is gone once the request is over.
func checkRecorded(t *testing.T, f *jailFixture, want []string) {
	t.Helper()
	var rec []recorded
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		rec = f.take(t)
		if len(rec) > 0 || time.Now().After(deadline) {
			break
		}
	}
	leader, found := 0, false
	for _, r := range rec {
		if r.argv[0] == want[0] && !slices.Contains(r.argv, "-r") { // jail -r: a removal, not the line that ran
			leader, found = r.pid, true
			if strings.Join(namesAsOne(r.argv), " | ") != strings.Join(want, " | ") {
				t.Errorf("argv\n got %q\nwant %q", r.argv, want)
			}
		}
	}
	if !found {
		t.Fatalf("no %s was run; recorded: %v", want[0], rec)
	}
	for deadline := time.Now().Add(10 * time.Second); len(proctable.GroupMembers(leader)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the jailed process group %d is still alive after the request", leader)
		}
	}
}

// ephemeralName stands for the name= colibri gives each ephemeral jail
// (colibri_PID_N), which namesAsOne writes in its place.
const ephemeralName = "name=colibri_PID_N"

var ephemeralNameRE = regexp.MustCompile(`^name=colibri_[0-9]+_[0-9]+$`)

func namesAsOne(argv []string) []string {
	out := slices.Clone(argv)
	for i, a := range out {
		if ephemeralNameRE.MatchString(a) {
			out[i] = ephemeralName
		}
	}
	return out
}

// An ephemeral jail whose server colibri had to kill (it ignores EOF and
// SIGTERM) is removed with jail -r NAME, the name it was created with,
// through the same privilege mode; a server that leaves by itself takes its
// jail along (jail(8) removes it), and no jail -r runs.
func TestEphemeralJailRemovedAfterKill(t *testing.T) {
	t.Parallel()
	for _, priv := range []string{"none", "mdo"} {
		t.Run(priv, func(t *testing.T) {
			f := newJailFixture(t)
			reg := writeRegistry(t, registryDoc{
				"stubborn": {"command": fakeBin, "args": []string{"stubborn"}, "env": f.env(), "jail": map[string]any{"path": "/var/jails/mcp"}},
				"polite":   {"command": fakeBin, "args": []string{"ok"}, "env": f.env(), "jail": map[string]any{"path": "/var/jails/mcp"}},
			})
			cs, logs := connectLogs(t, reg, "COLIBRI_MCP_EXTERNAL_CALL=1", "COLIBRI_JAIL_PRIV_MODE="+priv)
			defer func() {
				if t.Failed() {
					t.Log(logs)
				}
			}()
			res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "polite", "name": "echo", "arguments": map[string]any{"message": "x"}})
			if res.IsError {
				t.Fatalf("polite: %v", res.Content)
			}
			res = call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "stubborn", "name": "echo", "arguments": map[string]any{"message": "x"}})
			if res.IsError {
				t.Fatalf("stubborn: %v", res.Content)
			}
			var created []string
			removed := map[string]bool{}
			for deadline := time.Now().Add(20 * time.Second); len(created) < 2 || len(removed) == 0; time.Sleep(20 * time.Millisecond) {
				for _, r := range f.take(t) {
					if r.argv[0] != "jail" {
						continue
					}
					if slices.Contains(r.argv, "-r") {
						removed[strings.Join(r.argv, " ")] = true
						continue
					}
					for _, a := range r.argv {
						if ephemeralNameRE.MatchString(a) {
							created = append(created, strings.TrimPrefix(a, "name="))
						}
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("created %v, removed %v: want the stubborn server's jail removed", created, removed)
				}
			}
			stubborn := ""
			for _, name := range created {
				if removed["jail -r "+name] {
					stubborn = name
				}
			}
			if stubborn == "" || len(removed) != 1 {
				t.Errorf("created %v, removed %v: want exactly the killed server's jail removed", created, removed)
			}
		})
	}
}

// Settings that cannot work are refused with kind jail before anything
// runs; a command missing from root_path is spawn, naming the host path; and
// `check` reports both per server.
func TestJailRefusals(t *testing.T) {
	t.Parallel()
	f := newJailFixture(t)
	root := t.TempDir()
	reg := writeRegistry(t, registryDoc{
		"optname": {"command": demoBin, "env": f.env(), "jail": map[string]any{"name": "-r"}},
		"badip":   {"command": demoBin, "env": f.env(), "jail": map[string]any{"path": "/j", "ip4": "10.0.0.300"}},
		"noroot":  {"command": "/usr/local/bin/srv", "env": f.env(), "jail": map[string]any{"name": "mcp0", "root_path": root}},
	})
	cs := connect(t, reg, "COLIBRI_MCP_EXTERNAL_CALL=1")
	for server, kind := range map[string]string{"optname": "jail", "badip": "jail", "noroot": "spawn"} {
		res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": server, "name": "echo"})
		msg := wantColibriError(t, res, kind)
		if server == "noroot" && !strings.Contains(msg, filepath.Join(root, "usr/local/bin/srv")) {
			t.Errorf("spawn error %q should name the host path it checked", msg)
		}
	}
	if rec := f.take(t); len(rec) != 0 {
		t.Errorf("jail tools ran for refused settings: %v", rec)
	}

	out, err := exec.Command(colibriBin, "check", "--json", "--external-config", reg).Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("check on servers that cannot start: %v, want exit status 1", err)
	}
	var chk struct {
		OK      bool
		Servers []struct {
			Server string
			Error  *struct{ Kind string }
		}
	}
	if err := json.Unmarshal(out, &chk); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, s := range chk.Servers {
		if s.Error != nil {
			got[s.Server] = s.Error.Kind
		}
	}
	if chk.OK || got["optname"] != "jail" || got["badip"] != "jail" || got["noroot"] != "spawn" {
		t.Errorf("check = %s", out)
	}
}
