package jail_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/jail"
)

func TestWrap(t *testing.T) {
	argv := []string{"/usr/local/bin/srv", "--stdio", "-v", "a b", "x=y"}
	cases := []struct {
		name   string
		spec   jail.Spec
		priv   jail.Priv
		helper string
		want   string // argv joined by " | "
	}{
		{"existing jail", jail.Spec{Name: "mcp0"}, jail.PrivNone, "",
			"jexec | mcp0 | /usr/local/bin/srv | --stdio | -v | a b | x=y"},
		{"existing jail, user", jail.Spec{Name: "mcp0", User: "mcp"}, jail.PrivNone, "",
			"jexec | -U | mcp | mcp0 | /usr/local/bin/srv | --stdio | -v | a b | x=y"},
		{"existing jail, cwd", jail.Spec{Name: "mcp0", Cwd: "/srv"}, jail.PrivNone, "",
			"jexec | -d | /srv | mcp0 | /usr/local/bin/srv | --stdio | -v | a b | x=y"},
		{"existing jail, cwd with a space, user, mdo", jail.Spec{Name: "mcp0", Cwd: "/srv/my data", User: "mcp"}, jail.PrivMdo, "",
			"mdo | jexec | -d | /srv/my data | -U | mcp | mcp0 | /usr/local/bin/srv | --stdio | -v | a b | x=y"},
		{"root_path is not in the argv", jail.Spec{Name: "mcp0", RootPath: "/jails/mcp0"}, jail.PrivNone, "",
			"jexec | mcp0 | /usr/local/bin/srv | --stdio | -v | a b | x=y"},
		{"ephemeral", jail.Spec{Path: "/var/jails/mcp"}, jail.PrivNone, "",
			"jail | -q | -c | path=/var/jails/mcp | command=/usr/local/bin/srv | --stdio | -v | a b | x=y"},
		{"ephemeral, ip4 and user", jail.Spec{Path: "/var/jails/mcp", IP4: "10.0.0.5", User: "mcp"}, jail.PrivNone, "",
			"jail | -q | -c | -U | mcp | path=/var/jails/mcp | ip4.addr=10.0.0.5 | command=/usr/local/bin/srv | --stdio | -v | a b | x=y"},
		{"ephemeral, named for removal", jail.Spec{Path: "/var/jails/mcp", User: "mcp", Ephemeral: "colibri_12_3"}, jail.PrivNone, "",
			"jail | -q | -c | -U | mcp | name=colibri_12_3 | path=/var/jails/mcp | command=/usr/local/bin/srv | --stdio | -v | a b | x=y"},
		{"mdo", jail.Spec{Name: "mcp0"}, jail.PrivMdo, "",
			"mdo | jexec | mcp0 | /usr/local/bin/srv | --stdio | -v | a b | x=y"},
		{"helper, default path", jail.Spec{Name: "mcp0", User: "mcp"}, jail.PrivHelper, "",
			"/usr/local/libexec/colibri-jail-helper | jexec | -U | mcp | mcp0 | /usr/local/bin/srv | --stdio | -v | a b | x=y"},
		{"helper, own path", jail.Spec{Path: "/j"}, jail.PrivHelper, "/opt/helper",
			"/opt/helper | jail | -q | -c | path=/j | command=/usr/local/bin/srv | --stdio | -v | a b | x=y"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := jail.Wrap(tc.spec, tc.priv, tc.helper, argv)
			if err != nil {
				t.Fatal(err)
			}
			if s := strings.Join(got, " | "); s != tc.want {
				t.Errorf("argv\n got %s\nwant %s", s, tc.want)
			}
		})
	}
}

func TestWrapRefuses(t *testing.T) {
	cmd := []string{"/srv"}
	cases := []struct {
		name  string
		spec  jail.Spec
		priv  jail.Priv
		argv  []string
		field string
	}{
		{"neither name nor path", jail.Spec{}, jail.PrivNone, cmd, "spec"},
		{"both name and path", jail.Spec{Name: "a", Path: "/b"}, jail.PrivNone, cmd, "spec"},
		{"name as an option", jail.Spec{Name: "-r"}, jail.PrivNone, cmd, "name"},
		{"name with newline", jail.Spec{Name: "a\nb"}, jail.PrivNone, cmd, "name"},
		{"name with a space", jail.Spec{Name: "a b"}, jail.PrivNone, cmd, "name"},
		{"user as an option", jail.Spec{Name: "a", User: "-x"}, jail.PrivNone, cmd, "user"},
		{"user with NUL", jail.Spec{Name: "a", User: "m\x00cp"}, jail.PrivNone, cmd, "user"},
		{"relative path", jail.Spec{Path: "jails/x"}, jail.PrivNone, cmd, "path"},
		{"path as an option", jail.Spec{Path: "-c"}, jail.PrivNone, cmd, "path"},
		{"path with newline", jail.Spec{Path: "/j\n"}, jail.PrivNone, cmd, "path"},
		{"bad ip4", jail.Spec{Path: "/j", IP4: "10.0.0.256"}, jail.PrivNone, cmd, "ip4"},
		{"ip6 as ip4", jail.Spec{Path: "/j", IP4: "::1"}, jail.PrivNone, cmd, "ip4"},
		{"ip4 with a name", jail.Spec{Name: "a", IP4: "10.0.0.1"}, jail.PrivNone, cmd, "ip4"},
		{"root_path with a path", jail.Spec{Path: "/j", RootPath: "/r"}, jail.PrivNone, cmd, "root_path"},
		{"cwd with a path", jail.Spec{Path: "/j", Cwd: "/srv"}, jail.PrivNone, cmd, "cwd"},
		{"cwd as an option", jail.Spec{Name: "a", Cwd: "-U"}, jail.PrivNone, cmd, "cwd"},
		{"relative cwd", jail.Spec{Name: "a", Cwd: "srv"}, jail.PrivNone, cmd, "cwd"},
		{"cwd with NUL", jail.Spec{Name: "a", Cwd: "/srv\x00"}, jail.PrivNone, cmd, "cwd"},
		{"cwd with newline", jail.Spec{Name: "a", Cwd: "/srv\n/x"}, jail.PrivNone, cmd, "cwd"},
		{"command as an option", jail.Spec{Name: "a"}, jail.PrivNone, []string{"-h"}, "command"},
		{"command with newline", jail.Spec{Name: "a"}, jail.PrivNone, []string{"/srv\n"}, "command"},
		{"argument with NUL", jail.Spec{Name: "a"}, jail.PrivNone, []string{"/srv", "a\x00"}, "argument"},
		{"unknown privilege mode", jail.Spec{Name: "a"}, jail.Priv("sudo"), cmd, "COLIBRI_JAIL_PRIV_MODE"},
		{"empty argv", jail.Spec{Name: "a"}, jail.PrivNone, nil, "command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jail.Wrap(tc.spec, tc.priv, "", tc.argv)
			var je *jail.Error
			if !errors.As(err, &je) || je.Field != tc.field {
				t.Errorf("err = %v, want a jail.Error on %s", err, tc.field)
			}
		})
	}
	if _, err := jail.Wrap(jail.Spec{Name: "a"}, jail.PrivHelper, "relative/helper", cmd); err == nil {
		t.Error("a relative helper path was accepted")
	}
}

func TestParsePriv(t *testing.T) {
	for in, want := range map[string]jail.Priv{"": jail.PrivNone, "none": jail.PrivNone, "mdo": jail.PrivMdo, "helper": jail.PrivHelper} {
		if got, err := jail.ParsePriv(in); err != nil || got != want {
			t.Errorf("ParsePriv(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := jail.ParsePriv("root"); err == nil {
		t.Error(`ParsePriv("root") accepted`)
	}
}

func TestCheckRoot(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "usr/local/bin"), 0o755)
	os.WriteFile(filepath.Join(root, "usr/local/bin/srv"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(root, "usr/local/bin/data"), []byte("x"), 0o644)
	if p, err := jail.CheckRoot(root, "/usr/local/bin/srv", ""); err != nil || p != filepath.Join(root, "usr/local/bin/srv") {
		t.Errorf("absolute: %s %v", p, err)
	}
	if _, err := jail.CheckRoot(root, "srv", "/bin:/usr/local/bin"); err != nil {
		t.Errorf("bare name on PATH: %v", err)
	}
	for _, c := range []string{"/usr/local/bin/nope", "/usr/local/bin/data", "/usr/local/bin"} {
		if p, err := jail.CheckRoot(root, c, ""); !errors.Is(err, jail.ErrNotInRoot) || !strings.HasPrefix(p, root) {
			t.Errorf("%s: %s %v, want ErrNotInRoot with the host path", c, p, err)
		}
	}
}

// FuzzWrap: whatever the values, an accepted spec yields an argv in which
// the command and every argument come through as separate, unchanged
// entries right after the jail name (jexec) or "command=" (jail -c), a cwd
// only ever as jexec's "-d CWD" (absolute), and no value ever starts an
// option or carries a line break.
func FuzzWrap(f *testing.F) {
	f.Add("mcp0", "", "mcp", "", "", "/usr/local/bin/srv", "--stdio", "a b;rm -rf /", uint8(0))
	f.Add("", "/var/jails/x", "", "10.0.0.5", "", "node", "$(id)", "`x`", uint8(1))
	f.Add("-r", "", "", "", "", "/srv", "", "", uint8(2))
	f.Add("a", "", "-U", "", "", "-c", "x\ny", "\x00", uint8(0))
	f.Add("mcp0", "", "mcp", "", "/srv/data", "/usr/local/bin/srv", "--stdio", "", uint8(1))
	f.Add("", "/var/jails/x", "", "", "/srv", "node", "", "", uint8(0))
	f.Add("mcp0", "", "", "", "-d", "/srv", "", "", uint8(0))
	f.Fuzz(func(t *testing.T, name, path, user, ip4, cwd, command, arg1, arg2 string, privByte uint8) {
		priv := []jail.Priv{jail.PrivNone, jail.PrivMdo, jail.PrivHelper}[int(privByte)%3]
		spec := jail.Spec{Name: name, Path: path, User: user, IP4: ip4, Cwd: cwd}
		argv := []string{command, arg1, arg2}
		out, err := jail.Wrap(spec, priv, "", argv)
		if err != nil {
			return
		}
		// The prefix the contract's table gives, built independently.
		var want []string
		switch priv {
		case jail.PrivMdo:
			want = append(want, "mdo")
		case jail.PrivHelper:
			want = append(want, jail.DefaultHelper)
		}
		if name != "" {
			want = append(want, "jexec")
			if cwd != "" {
				want = append(want, "-d", cwd)
			}
			if user != "" {
				want = append(want, "-U", user)
			}
			want = append(want, name)
			want = append(want, argv...)
		} else {
			if cwd != "" {
				t.Fatalf("cwd %q accepted with an ephemeral jail: jail -c has no working directory", cwd)
			}
			want = append(want, "jail", "-q", "-c")
			if user != "" {
				want = append(want, "-U", user)
			}
			want = append(want, "path="+path)
			if ip4 != "" {
				want = append(want, "ip4.addr="+ip4)
			}
			want = append(want, "command="+command)
			want = append(want, argv[1:]...)
		}
		if !slices.Equal(out, want) {
			t.Fatalf("argv\n got %q\nwant %q", out, want)
		}
		if cwd != "" && !strings.HasPrefix(cwd, "/") {
			t.Fatalf("relative cwd %q accepted", cwd)
		}
		for _, v := range []string{name, path, user, ip4, cwd, command} {
			if v != "" && (strings.HasPrefix(v, "-") || strings.ContainsAny(v, "\x00\n\r")) {
				t.Fatalf("accepted %q", v)
			}
		}
	})
}

// An ephemeral jail colibri had to kill is removed through the same
// privilege mode: PREFIX jail -r NAME; the name is read back from the line
// that created it.
func TestRemove(t *testing.T) {
	for _, tc := range []struct {
		priv   jail.Priv
		helper string
		want   string
	}{
		{jail.PrivNone, "", "jail | -r | colibri_1_2"},
		{jail.PrivMdo, "", "mdo | jail | -r | colibri_1_2"},
		{jail.PrivHelper, "/opt/helper", "/opt/helper | jail | -r | colibri_1_2"},
	} {
		got, err := jail.Remove("colibri_1_2", tc.priv, tc.helper)
		if err != nil || strings.Join(got, " | ") != tc.want {
			t.Errorf("%s: %q, %v; want %s", tc.priv, got, err, tc.want)
		}
		line, err := jail.Wrap(jail.Spec{Path: "/j", Ephemeral: "colibri_1_2"}, tc.priv, tc.helper, []string{"/srv", "name=not-this"})
		if err != nil {
			t.Fatal(err)
		}
		if n := jail.EphemeralName(line); n != "colibri_1_2" {
			t.Errorf("EphemeralName(%q) = %q", line, n)
		}
	}
	for _, bad := range []string{"", "-r", "a.b", "a b", "x\n"} {
		if _, err := jail.Remove(bad, jail.PrivNone, ""); err == nil {
			t.Errorf("Remove(%q) accepted", bad)
		}
	}
	if n := jail.EphemeralName([]string{"/usr/sbin/jail", "-q", "-c", "name=c_1", "path=/j", "command=/srv"}); n != "c_1" {
		t.Errorf("a jail found on PATH: ephemeral name %q", n)
	}
	if n := jail.EphemeralName([]string{"jexec", "mcp0", "/srv", "name=x"}); n != "" {
		t.Errorf("a jexec line has ephemeral name %q", n)
	}
}

// jexec -d exists only in newer releases: the installed jexec is read for
// its usage line.
func TestJexecHasCwd(t *testing.T) {
	dir := t.TempDir()
	newer, older := filepath.Join(dir, "newer"), filepath.Join(dir, "older")
	os.WriteFile(newer, []byte("\x7fELF...usage: jexec [-l] [-d working-directory] [[-u username] | [-U username]] jail [command ...]\n"), 0o755)
	os.WriteFile(older, []byte("\x7fELF...usage: jexec [-l] [-u username | -U username] jail [command ...]\n"), 0o755)
	if ok, err := jail.JexecHasCwd(newer); !ok || err != nil {
		t.Errorf("newer: %v, %v", ok, err)
	}
	if ok, err := jail.JexecHasCwd(older); ok || err != nil {
		t.Errorf("older: %v, %v", ok, err)
	}
}
