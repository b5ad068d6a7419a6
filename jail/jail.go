// Package jail turns a command and a FreeBSD jail specification into the argv
// that runs the command confined: jexec(8) for an existing jail, jail(8) -c
// for an ephemeral one, optionally behind mdo(1) or a privileged helper.
//
// The builders are pure: they check every value and return an argv, and never
// start anything or pass anything through a shell.
//
//	argv, err := jail.Wrap(jail.Spec{Name: "mcp0", User: "mcp", Cwd: "/srv"}, jail.PrivNone, "", []string{"/usr/local/bin/srv", "--stdio"})
//	// argv: jexec -d /srv -U mcp mcp0 /usr/local/bin/srv --stdio
package jail

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Spec is where a command is confined. Exactly one of Name and Path is set.
type Spec struct {
	Name     string // an existing, persistent jail: jexec
	Path     string // the root of an ephemeral jail: jail -c
	RootPath string // with Name: the jail's root on the host, to check the command before spawning
	User     string // a user of the jail's own passwd
	IP4      string // with Path: the ephemeral jail's IPv4 address
	Cwd      string // with Name: the working directory inside the jail (jexec -d)
	// Ephemeral, with Path, names the ephemeral jail (name=), so that
	// colibri can remove it (Remove) when it had to kill the tree: jail(8)
	// holds a new jail with a temporary persist that it clears only when
	// its command returns.
	Ephemeral string
}

// Priv is how the jail commands gain privilege (COLIBRI_JAIL_PRIV_MODE).
type Priv string

const (
	PrivNone   Priv = "none"   // run the line as it is: colibri runs as root
	PrivMdo    Priv = "mdo"    // prefix mdo(1), which asks mac_do(4) for root
	PrivHelper Priv = "helper" // prefix the helper ($COLIBRI_JAIL_HELPER)
)

// DefaultHelper is the helper run in PrivHelper mode when COLIBRI_JAIL_HELPER is unset.
const DefaultHelper = "/usr/local/libexec/colibri-jail-helper"

// ParsePriv reads COLIBRI_JAIL_PRIV_MODE; "" means none.
func ParsePriv(s string) (Priv, error) {
	switch Priv(s) {
	case "", PrivNone:
		return PrivNone, nil
	case PrivMdo, PrivHelper:
		return Priv(s), nil
	}
	return "", &Error{Field: "COLIBRI_JAIL_PRIV_MODE", Value: s, Reason: `must be "none", "mdo" or "helper"`}
}

// Error is a jail setting that cannot work. Nothing was run.
type Error struct {
	Field  string // "name", "user", "COLIBRI_JAIL_PRIV_MODE", …
	Value  string
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("jail %s %q: %s", e.Field, e.Value, e.Reason)
}

// Wrap returns the argv that runs argv (a command and its arguments) in the
// jail spec describes, with the privilege prefix of priv; helper is the
// helper's path for PrivHelper ("" means DefaultHelper).
//
// The command and each argument stay separate argv entries, unchanged: after
// the jail name for jexec, after "command=" for jail -c. jexec(8): "jexec
// [-l] [-d working-directory] [[-u username] | [-U username]] jail
// [command ...]"; -d is "the working directory for running commands inside
// the jail. The default is the jail root directory."; -U runs the command
// "as user in the jail environment".
// jail(8): "jail [-dhilqv] [-J jid_file] [-u username] [-U username] [-cmr]
// param=value ... [command=command ...]"; "command: ... the remaining
// arguments are passed to the command".
func Wrap(spec Spec, priv Priv, helper string, argv []string) ([]string, error) {
	if len(argv) == 0 {
		return nil, &Error{Field: "command", Reason: "is empty"}
	}
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	if err := checkValue("command", argv[0]); err != nil {
		return nil, err
	}
	for _, a := range argv[1:] {
		// Arguments may start with "-" (they follow the command, where
		// neither jexec nor jail reads options), but a NUL cannot be
		// passed through execve(2) at all.
		if strings.IndexByte(a, 0) >= 0 {
			return nil, &Error{Field: "argument", Value: a, Reason: "holds a NUL byte"}
		}
	}

	var out []string
	switch priv {
	case PrivNone, "":
	case PrivMdo:
		// mdo(1): "mdo [-u username] [-i] [command [args]]": without -u the
		// command runs as root, if mac_do(4) allows it.
		out = append(out, "mdo")
	case PrivHelper:
		if helper == "" {
			helper = DefaultHelper
		}
		if !filepath.IsAbs(helper) {
			return nil, &Error{Field: "COLIBRI_JAIL_HELPER", Value: helper, Reason: "must be an absolute path"}
		}
		if err := checkValue("COLIBRI_JAIL_HELPER", helper); err != nil {
			return nil, err
		}
		out = append(out, helper)
	default:
		return nil, &Error{Field: "COLIBRI_JAIL_PRIV_MODE", Value: string(priv), Reason: `must be "none", "mdo" or "helper"`}
	}

	if spec.Name != "" {
		out = append(out, "jexec")
		if spec.Cwd != "" {
			out = append(out, "-d", spec.Cwd)
		}
		if spec.User != "" {
			out = append(out, "-U", spec.User)
		}
		out = append(out, spec.Name)
		return append(out, argv...), nil
	}
	// -q first: jail(8) then writes nothing to stdout, which is the
	// hosted server's MCP channel.
	out = append(out, "jail", "-q", "-c")
	if spec.User != "" {
		out = append(out, "-U", spec.User)
	}
	if spec.Ephemeral != "" {
		out = append(out, "name="+spec.Ephemeral)
	}
	out = append(out, "path="+spec.Path)
	if spec.IP4 != "" {
		out = append(out, "ip4.addr="+spec.IP4)
	}
	out = append(out, "command="+argv[0])
	return append(out, argv[1:]...), nil
}

// Check reports a spec that cannot work, without building anything.
func Check(spec Spec, priv Priv, helper string) error {
	_, err := Wrap(spec, priv, helper, []string{"/bin/true"})
	return err
}

func checkSpec(s Spec) error {
	switch {
	case s.Name == "" && s.Path == "":
		return &Error{Field: "spec", Reason: `needs "name" (an existing jail) or "path" (an ephemeral jail)`}
	case s.Name != "" && s.Path != "":
		return &Error{Field: "spec", Value: s.Name, Reason: `"name" and "path" exclude each other`}
	}
	if s.Name != "" {
		if err := checkValue("name", s.Name); err != nil {
			return err
		}
		if !wordChars(s.Name) {
			return &Error{Field: "name", Value: s.Name, Reason: "may hold only letters, digits, '_', '-' and '.'"}
		}
		if s.IP4 != "" {
			return &Error{Field: "ip4", Value: s.IP4, Reason: `goes with "path": an existing jail already has its addresses`}
		}
	}
	if s.Path != "" {
		if err := checkAbs("path", s.Path); err != nil {
			return err
		}
		if s.RootPath != "" {
			return &Error{Field: "root_path", Value: s.RootPath, Reason: `goes with "name"`}
		}
		if s.Ephemeral != "" && (checkValue("ephemeral name", s.Ephemeral) != nil || !jailNameChars(s.Ephemeral)) {
			return &Error{Field: "ephemeral name", Value: s.Ephemeral, Reason: "may hold only letters, digits and '_'"}
		}
		if s.Cwd != "" {
			// jail(8) -c has no working directory: the command starts in
			// the new jail's root.
			return &Error{Field: "cwd", Value: s.Cwd, Reason: `goes with "name" only: jail -c has no working directory`}
		}
	}
	if s.Cwd != "" {
		if err := checkAbs("cwd", s.Cwd); err != nil {
			return err
		}
	}
	if s.RootPath != "" {
		if err := checkAbs("root_path", s.RootPath); err != nil {
			return err
		}
	}
	if s.User != "" {
		if err := checkValue("user", s.User); err != nil {
			return err
		}
		if !wordChars(s.User) {
			return &Error{Field: "user", Value: s.User, Reason: "may hold only letters, digits, '_', '-' and '.'"}
		}
	}
	if s.IP4 != "" {
		if err := checkValue("ip4", s.IP4); err != nil {
			return err
		}
		a, err := netip.ParseAddr(s.IP4)
		if err != nil || !a.Is4() {
			return &Error{Field: "ip4", Value: s.IP4, Reason: "is not an IPv4 address"}
		}
	}
	return nil
}

// checkValue refuses what jexec or jail would read as an option, or what
// cannot travel as one argv entry.
func checkValue(field, v string) error {
	switch {
	case v == "":
		return &Error{Field: field, Value: v, Reason: "is empty"}
	case strings.HasPrefix(v, "-"):
		return &Error{Field: field, Value: v, Reason: "starts with '-' and would be read as an option"}
	case strings.ContainsAny(v, "\x00\n\r"):
		return &Error{Field: field, Value: v, Reason: "holds a NUL or newline"}
	}
	return nil
}

func checkAbs(field, p string) error {
	if err := checkValue(field, p); err != nil {
		return err
	}
	if !path.IsAbs(p) {
		return &Error{Field: field, Value: p, Reason: "must be an absolute path"}
	}
	return nil
}

func wordChars(s string) bool {
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// jailNameChars: a jail name of colibri's own; '.' would make it
// hierarchical (jail(8): "name ... a dot-separated hierarchy").
func jailNameChars(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Remove returns the argv that removes the ephemeral jail name, with the
// privilege prefix of priv (jail(8): "-r: Remove the jail specified by jid
// or name. All jailed processes are killed").
func Remove(name string, priv Priv, helper string) ([]string, error) {
	if checkValue("ephemeral name", name) != nil || !jailNameChars(name) {
		return nil, &Error{Field: "ephemeral name", Value: name, Reason: "may hold only letters, digits and '_'"}
	}
	line, err := Wrap(Spec{Name: name}, priv, helper, []string{"/bin/true"})
	if err != nil {
		return nil, err
	}
	// Wrap made PREFIX… jexec NAME /bin/true: keep the prefix.
	i := len(line) - 3
	return append(line[:i:i], "jail", "-r", name), nil
}

// EphemeralName is the name= of the ephemeral jail that argv (a line Wrap
// built) creates, or "".
func EphemeralName(argv []string) string {
	for i := 0; i+2 < len(argv); i++ {
		if path.Base(argv[i]) != "jail" || argv[i+1] != "-q" || argv[i+2] != "-c" {
			continue
		}
		for _, a := range argv[i+3:] {
			if strings.HasPrefix(a, "command=") {
				return ""
			}
			if name, ok := strings.CutPrefix(a, "name="); ok {
				return name
			}
		}
	}
	return ""
}

// JexecHasCwd reports whether the jexec(8) at path knows -d: it exists
// only in newer FreeBSD releases, whose usage line reads "[-d
// working-directory]". It reads the program (at most 4 MiB), never runs it.
func JexecHasCwd(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4<<20))
	if err != nil {
		return false, err
	}
	return bytes.Contains(b, []byte("-d working-directory")), nil
}

// ErrNotInRoot is returned by CheckRoot for a command that is not an
// executable file under the jail's root.
var ErrNotInRoot = errors.New("not an executable file inside the jail root")

// CheckRoot checks that command exists and is executable inside the jail
// whose filesystem is at rootPath on the host. An absolute command is looked
// up at rootPath+command; a bare name in each directory of pathList (the
// child's PATH) under rootPath. It returns the host path it checked (or the
// first it tried) and ErrNotInRoot when nothing fits.
func CheckRoot(rootPath, command, pathList string) (string, error) {
	var candidates []string
	if path.IsAbs(command) {
		candidates = []string{filepath.Join(rootPath, command)}
	} else {
		for _, dir := range filepath.SplitList(pathList) {
			if path.IsAbs(dir) {
				candidates = append(candidates, filepath.Join(rootPath, dir, command))
			}
		}
	}
	if len(candidates) == 0 {
		return filepath.Join(rootPath, command), ErrNotInRoot
	}
	for _, c := range candidates {
		st, err := os.Stat(c)
		if err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return c, nil
		}
	}
	return candidates[0], ErrNotInRoot
}
