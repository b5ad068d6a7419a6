// Package statedir is colibri's state folder: the one folder it writes at
// run time (docs/operations.md, "Where colibri keeps its state") — the pin
// file unless --pin-file names another, OAuth token files without a
// token_file, the sandboxes' private homes and temporary folders. Resolve
// finds it (--state-dir, else the default for colibri's user) and says
// whether it can be used; Needs says whether a registry's entry needs it, so
// that an unusable folder is reported where it matters (serve's log,
// /readyz, check, the requests that need it) and nowhere else.
//
//	d := statedir.Resolve(flag, os.Geteuid(), getenv)
//	if err := d.Problem(reg, pinsHere); err != nil {
//		// /readyz: 503 and err's words
//	}
package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// RootDefault is root's state folder (FreeBSD's place for a daemon's state).
const RootDefault = "/var/db/colibri"

// Dir is the state folder of one run.
type Dir struct {
	// Path is the folder, absolute and clean; "" when there is no place for
	// one at all (neither HOME nor XDG_STATE_HOME).
	Path string
	// Named is true when --state-dir or COLIBRI_MCP_STATE_DIR gave it.
	Named bool
	// Err says why the folder cannot be used (an *Error); nil when it can.
	Err error
}

// Error is a state folder that cannot be used. Its text names the folder and
// the setting that gives colibri another, and is the same wherever it is
// reported: serve's warning, /readyz, check, a request's config error.
type Error struct {
	Path   string // "" when there is no place for one
	Reason string
	Named  bool
}

func (e *Error) Error() string {
	what := "state folder " + e.Path
	if e.Path == "" {
		what = "no state folder"
	}
	fix := "give colibri a folder its user owns (mode 0700) with --state-dir DIR / COLIBRI_MCP_STATE_DIR"
	if e.Named {
		fix = "fix it, or name another with --state-dir DIR / COLIBRI_MCP_STATE_DIR"
	}
	return fmt.Sprintf("%s cannot be used (%s): %s", what, e.Reason, fix)
}

// Resolve is the state folder of a process of effective user euid: named
// when not empty (--state-dir / COLIBRI_MCP_STATE_DIR), else /var/db/colibri
// for root, else $XDG_STATE_HOME/colibri-mcp ($HOME/.local/state when
// XDG_STATE_HOME is unset or not absolute, as the XDG base directory
// specification says). It looks at the folder (nothing is created) and sets
// Err when colibri could not use it.
func Resolve(named string, euid int, getenv func(string) (string, bool)) *Dir {
	if named != "" {
		d := &Dir{Path: filepath.Clean(named), Named: true}
		if !filepath.IsAbs(named) {
			d.Err = &Error{Path: named, Reason: "not an absolute path", Named: true}
			return d
		}
		d.Err = check(d.Path, euid, "", true)
		return d
	}
	if euid == 0 {
		return &Dir{Path: RootDefault, Err: check(RootDefault, euid, "", false)}
	}
	if s, ok := getenv("XDG_STATE_HOME"); ok && filepath.IsAbs(s) {
		p := filepath.Join(s, "colibri-mcp")
		return &Dir{Path: p, Err: check(p, euid, "", false)}
	}
	home, ok := getenv("HOME")
	if !ok || !filepath.IsAbs(home) {
		return &Dir{Err: &Error{Reason: "HOME and XDG_STATE_HOME are not set to absolute paths"}}
	}
	p := filepath.Join(home, ".local", "state", "colibri-mcp")
	return &Dir{Path: p, Err: check(p, euid, filepath.Clean(home), false)}
}

// Join is a path inside the folder ("" when there is no folder).
func (d *Dir) Join(elem ...string) string {
	if d.Path == "" {
		return ""
	}
	return filepath.Join(append([]string{d.Path}, elem...)...)
}

// check says why path cannot be colibri's state folder, or nil. An
// existing path must be a folder itself (lstat: the folder may not be a
// symbolic link; links above it are followed), colibri's user's,
// writable by it, and writable by neither group nor others. A missing one must be creatable:
// its nearest existing parent a folder colibri's user may write. home, when
// not empty, is the HOME the default lies under, named when it is missing.
func check(path string, euid int, home string, named bool) error {
	bad := func(format string, a ...any) error {
		return &Error{Path: path, Reason: fmt.Sprintf(format, a...), Named: named}
	}
	fi, err := os.Lstat(path)
	switch {
	case err == nil:
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return bad("it is a symbolic link; colibri uses a folder itself: name the folder it points to")
		case !fi.IsDir():
			return bad("it is not a folder")
		}
		if uid, ok := owner(fi); ok && uid != euid {
			return bad("it belongs to uid %d, not to colibri's uid %d: chown %d %s", uid, euid, euid, path)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return bad("group or others may write to it (mode %04o): chmod 0700 %s", fi.Mode().Perm(), path)
		}
		if !writable(path) {
			return bad("colibri's user cannot write to it (mode %04o): chmod 0700 %s", fi.Mode().Perm(), path)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return bad("%v", unwrapPath(err))
	}
	if home != "" {
		if _, err := os.Stat(home); errors.Is(err, fs.ErrNotExist) {
			return bad("HOME %s does not exist", home)
		}
	}
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			return bad("it does not exist, and %s is not a folder", p)
		case err == nil:
			if !writable(p) {
				return bad("it does not exist, and colibri's user cannot create it in %s", p)
			}
			return nil
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return bad("it does not exist, and %s cannot be read: %v", p, unwrapPath(err))
		case p == filepath.Dir(p):
			return bad("it does not exist, nor does any folder above it")
		}
	}
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Needs says what of srv's needs the state folder ("" when nothing):
// pinsHere is whether the pin file lies in it (no --pin-file).
func Needs(reg *registry.Registry, srv *registry.Server, pinsHere bool) string {
	switch {
	case srv.Sandbox != nil && !srv.Sandbox.Off:
		return "the sandbox's private HOME and TMPDIR"
	case srv.OAuth != nil && srv.OAuth.TokenFile == "" && srv.OAuth.Grant == registry.GrantAuthorizationCode:
		return "its OAuth token file (no oauth.token_file)"
	case pinsHere && reg != nil && !reg.Locked() && reg.PinMode(srv) != registry.PinOff:
		return "its pins (no --pin-file)"
	}
	return ""
}

// Problem is d.Err when some server of reg needs the folder, else nil. The
// error's words are d.Err's, with the first server that needs it.
func (d *Dir) Problem(reg *registry.Registry, pinsHere bool) error {
	if d.Err == nil || reg == nil {
		return nil
	}
	for _, name := range reg.Names() {
		if what := Needs(reg, reg.Servers[name], pinsHere); what != "" {
			return &NeededError{Err: d.Err, Server: name, What: what}
		}
	}
	return nil
}

// NeededError is an unusable state folder that a server needs.
type NeededError struct {
	Err    error
	Server string
	What   string
}

func (e *NeededError) Error() string {
	return fmt.Sprintf("%v (server %q needs it for %s)", e.Err, e.Server, e.What)
}

func (e *NeededError) Unwrap() error { return e.Err }
