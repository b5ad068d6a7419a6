package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestResolveDefaults(t *testing.T) {
	home := t.TempDir()
	for _, c := range []struct {
		name string
		euid int
		env  map[string]string
		want string
	}{
		{"root", 0, map[string]string{"HOME": "/root", "XDG_STATE_HOME": "/x"}, RootDefault},
		{"xdg", 1000, map[string]string{"HOME": home, "XDG_STATE_HOME": home + "/s"}, home + "/s/colibri-mcp"},
		{"relative xdg ignored", 1000, map[string]string{"HOME": home, "XDG_STATE_HOME": "s"}, home + "/.local/state/colibri-mcp"},
		{"home", 1000, map[string]string{"HOME": home}, home + "/.local/state/colibri-mcp"},
		{"nothing", 1000, map[string]string{}, ""},
	} {
		d := Resolve("", c.euid, env(c.env))
		if d.Path != c.want || d.Named {
			t.Errorf("%s: %q named=%v, want %q", c.name, d.Path, d.Named, c.want)
		}
	}
	if d := Resolve("", 1000, env(nil)); d.Err == nil || !strings.Contains(d.Err.Error(), "--state-dir") {
		t.Errorf("no HOME: %v", d.Err)
	}
}

func TestResolveChecks(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	os.Mkdir(ok, 0o700)
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o770)
	link := filepath.Join(dir, "link")
	os.Symlink(ok, link)
	viaLink := filepath.Join(link, "inner") // a link above the folder is followed
	os.Mkdir(filepath.Join(ok, "inner"), 0o700)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	euid := os.Geteuid()
	for _, c := range []struct {
		path, want string
	}{
		{ok, ""},
		{viaLink, ""},
		{filepath.Join(dir, "missing", "deeper"), ""},
		{open, "chmod 0700"},
		{link, "symbolic link"},
		{file, "not a folder"},
		{filepath.Join(file, "under"), "is not a folder"},
		{"rel", "not an absolute path"},
	} {
		d := Resolve(c.path, euid, env(nil))
		switch {
		case c.want == "" && d.Err != nil:
			t.Errorf("%s: %v", c.path, d.Err)
		case c.want != "" && (d.Err == nil || !strings.Contains(d.Err.Error(), c.want) || !strings.Contains(d.Err.Error(), "--state-dir")):
			t.Errorf("%s: %v, want %q", c.path, d.Err, c.want)
		}
	}
	// Another user's folder names the chown to run.
	if d := Resolve(ok, euid+1, env(nil)); d.Err == nil || !strings.Contains(d.Err.Error(), "chown") {
		t.Errorf("another user's folder: %v", d.Err)
	}
	// A HOME that does not exist is named.
	d := Resolve("", 1000, env(map[string]string{"HOME": filepath.Join(dir, "nonexistent")}))
	if d.Err == nil || !strings.Contains(d.Err.Error(), "HOME "+filepath.Join(dir, "nonexistent")+" does not exist") {
		t.Errorf("missing HOME: %v", d.Err)
	}
}

func TestNeeds(t *testing.T) {
	bad := &Dir{Path: "/x", Err: &Error{Path: "/x", Reason: "r"}}
	reg := func(top string, srv *registry.Server) *registry.Registry {
		srv.Name = "s"
		return &registry.Registry{Pin: top, Servers: map[string]*registry.Server{"s": srv}}
	}
	for _, c := range []struct {
		name     string
		reg      *registry.Registry
		pinsHere bool
		need     bool
	}{
		{"pins here", reg("", &registry.Server{Command: "x"}), true, true},
		{"pin file elsewhere", reg("", &registry.Server{Command: "x"}), false, false},
		{"pins off", reg("off", &registry.Server{Command: "x"}), true, false},
		{"locked", reg(registry.PinLocked, &registry.Server{Command: "x"}), true, false},
		{"sandbox", reg("off", &registry.Server{Command: "x", Sandbox: &registry.Sandbox{}}), false, true},
		{"sandbox false", reg("off", &registry.Server{Command: "x", Sandbox: &registry.Sandbox{Off: true}}), false, false},
		{"oauth code", reg("off", &registry.Server{URL: "https://x", OAuth: &registry.OAuth{Grant: registry.GrantAuthorizationCode}}), false, true},
		{"oauth token file", reg("off", &registry.Server{URL: "https://x", OAuth: &registry.OAuth{Grant: registry.GrantAuthorizationCode, TokenFile: "/t"}}), false, false},
		{"client credentials", reg("off", &registry.Server{URL: "https://x", OAuth: &registry.OAuth{Grant: registry.GrantClientCredentials}}), false, false},
	} {
		err := bad.Problem(c.reg, c.pinsHere)
		if (err != nil) != c.need {
			t.Errorf("%s: %v, want need=%v", c.name, err, c.need)
		}
		var se *Error
		if err != nil && (!errors.As(err, &se) || !strings.Contains(err.Error(), `server "s"`)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// A folder of colibri's own user that it may not write (mode 0500) cannot
// hold pins or tokens: it is reported now, not at the first write. Root
// writes it anyway, so as root it is usable.
func TestResolveReadOnlyFolder(t *testing.T) {
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	d := Resolve(ro, os.Geteuid(), env(nil))
	if os.Geteuid() == 0 {
		if d.Err != nil {
			t.Errorf("root's 0500 folder: %v", d.Err)
		}
		return
	}
	if d.Err == nil || !strings.Contains(d.Err.Error(), "cannot write") || !strings.Contains(d.Err.Error(), "chmod 0700") {
		t.Errorf("a 0500 folder of colibri's user: %v", d.Err)
	}
}
