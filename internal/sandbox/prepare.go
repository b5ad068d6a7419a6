package sandbox

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Spec is an entry's "sandbox", its paths resolved (absolute).
type Spec struct {
	Read, Write   []string
	Unix          []string
	Net           bool
	MaxMemoryMB   int64
	MaxCPUSeconds int64
	// MaxOpenFiles is RLIMIT_NOFILE, soft and hard; 0: 1024.
	MaxOpenFiles int64
	// HomePerRequest makes the private HOME fresh for each process,
	// removed with its TMPDIR (Cleanup), instead of one per server.
	HomePerRequest bool
	// Egress is a "net" list: the server reaches the egress proxy on
	// ProxyPort (loopback) and nothing else.
	Egress    bool
	ProxyPort int
	// ProxySock is the egress proxy's Unix socket where colibri starts the
	// launcher in a network namespace of its own; "": user namespaces are
	// not available, and only best_effort's per-port fallback is left.
	ProxySock  string
	BestEffort bool
}

// defaultOpenFiles is RLIMIT_NOFILE where the spec names none: it bounds
// the descriptors, and so the kernel's socket buffers, a process holds.
const defaultOpenFiles = 1024

// Input is what Prepare needs to know of the server and of colibri.
type Input struct {
	Server string
	Spec   Spec
	// Argv is the command, its first element an absolute path.
	Argv []string
	// Dir is the child's working directory, against which relative
	// arguments are read.
	Dir string
	// StateDir is colibri's state folder ($XDG_STATE_HOME/colibri-mcp):
	// private homes and temporary folders live under it.
	StateDir string
	// Protect are colibri's own files (registry, pin file, audit log, token
	// and key files…): no granted path may hold one.
	Protect []string
	// ABI is the Landlock ABI of the kernel (DetectABI), or less.
	ABI int
	// Home is colibri's HOME ("": os.UserHomeDir): what the command's own
	// files never widen to.
	Home string
}

// NeedABI is the Landlock ABI the whole sandbox needs: filesystem rules (1),
// file renames across folders (2), truncation (3), TCP (4), ioctl on devices
// (5), signals and abstract Unix sockets scoped to the server (6).
const NeedABI = 6

// unixRulesABI is the first Landlock ABI that rules on reaching a pathname
// Unix socket (connect(2), sendmsg(2)): below it the sandbox refuses every
// Unix socket through seccomp instead, but a connected stream pair.
const unixRulesABI = 9

// abiFeatures names what each ABI added, for the message about a kernel
// that lacks it.
var abiFeatures = []string{
	1: "filesystem rules",
	2: "rules on moving files between folders",
	3: "truncation rules",
	4: "TCP bind and connect rules",
	5: "ioctl rules on devices",
	6: "scoping of signals and abstract Unix sockets",
}

// Error is a sandbox that cannot be set up. Config marks a mistake in the
// registry (a granted path that holds colibri's own files); otherwise the
// kernel lacks what a rule needs.
type Error struct {
	Config bool
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// systemPlaces are read-only inside every sandbox (those that exist).
var systemPlaces = []string{"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/opt"}

// devices are readable and writable inside every sandbox; readDevices
// readable only (none can be mapped shared and writable: /dev/null and
// /dev/full have no mmap).
var (
	devices     = []string{"/dev/null", "/dev/full"}
	readDevices = []string{"/dev/zero", "/dev/random", "/dev/urandom"}
)

// Prepare turns an entry's sandbox into the launcher's plan. The warning,
// when not empty, says what a best_effort sandbox runs without.
func Prepare(in Input) (*Plan, string, error) {
	var warning string
	if !filepath.IsAbs(in.StateDir) {
		return nil, "", &Error{Msg: fmt.Sprintf("no state folder for the private HOME and TMPDIR (%q): set XDG_STATE_HOME or HOME", in.StateDir)}
	}
	if in.ABI < NeedABI {
		missing := abiFeatures[max(in.ABI, 0)+1:]
		have := "this kernel has no Landlock"
		if in.ABI > 0 {
			have = fmt.Sprintf("this kernel's Landlock is ABI %d", in.ABI)
		}
		msg := fmt.Sprintf("%s; the sandbox needs ABI %d (missing: %s)", have, NeedABI, strings.Join(missing, ", "))
		if !in.Spec.BestEffort {
			return nil, "", &Error{Msg: msg}
		}
		warning = msg + `; running with what the kernel has ("best_effort": true)`
	}
	// A "net" list: the server in a network namespace of its own is what
	// isolates it (ProxySock: colibri starts the launcher in one); where
	// user namespaces are not available, what is left is Landlock's TCP
	// rule, by port (ABI 4): best_effort's fallback.
	if in.Spec.Egress && in.Spec.ProxySock == "" {
		msg := "egress by destination keeps a server to its proxy by a network namespace of its own, and unprivileged user namespaces are not available here"
		switch {
		case in.ABI < 4:
			return nil, "", &Error{Msg: msg + fmt.Sprintf("; its fallback, Landlock's TCP rule, needs ABI 4 (this kernel: %d)", max(in.ABI, 0))}
		case !in.Spec.BestEffort:
			return nil, "", &Error{Msg: msg + `; "best_effort": true falls back to Landlock's TCP rule: connections to the proxy's port only, at any address`}
		}
		warning = strings.TrimPrefix(warning+"; ", "; ") + fmt.Sprintf("no network namespace: connections to the egress proxy's port %d only, at any address (Landlock's TCP rule)", in.Spec.ProxyPort)
	}
	unixOpen := false
	if len(in.Spec.Unix) > 0 && in.ABI < unixRulesABI {
		have := "this kernel has no Landlock"
		if in.ABI > 0 {
			have = fmt.Sprintf("this kernel's Landlock is ABI %d", in.ABI)
		}
		msg := fmt.Sprintf(`%s; keeping a server to the Unix sockets "unix" names needs ABI %d (below it the sandbox refuses every Unix socket)`, have, unixRulesABI)
		if !in.Spec.BestEffort {
			return nil, "", &Error{Msg: msg}
		}
		unixOpen = true
		warning = strings.TrimPrefix(warning+"; ", "; ") + msg + `; every pathname Unix socket is reachable ("best_effort": true)`
	}
	p := &Plan{
		UnixOpen:   unixOpen,
		ProxyPort:  in.Spec.ProxyPort,
		ProxySock:  in.Spec.ProxySock,
		Net:        in.Spec.Net || in.Spec.Egress, // TCP to the proxy: its rules are ProxyPort's
		MemoryMB:   in.Spec.MaxMemoryMB,
		CPUSeconds: in.Spec.MaxCPUSeconds,
		ABI:        in.ABI,
		OpenFiles:  in.Spec.MaxOpenFiles,
		Tmp:        filepath.Join(in.StateDir, "tmp", in.Server, randomName()),
		Home:       HomeDir(in.StateDir, in.Server),
	}
	if p.OpenFiles <= 0 {
		p.OpenFiles = defaultOpenFiles
	}
	if in.Spec.HomePerRequest {
		p.Home = requestHome(p.Tmp)
	}
	protect := resolveAll(in.Protect)
	for _, set := range []struct {
		key   string
		paths []string
		dst   *[]string
	}{{"read", in.Spec.Read, &p.Read}, {"write", in.Spec.Write, &p.Write}, {"unix", in.Spec.Unix, &p.Unix}} {
		for i, path := range set.paths {
			// A unix grant reaches sockets and reads nothing: it may hold
			// colibri's files.
			if f := holds(path, protect); f != "" && set.key != "unix" {
				return nil, "", &Error{Config: true, Msg: fmt.Sprintf(
					"sandbox %s/%d: %s holds colibri's own file %s, which no hosted server may read; grant a folder beside it", set.key, i, path, f)}
			}
			// The rule is made on what colibri checked: a symbolic link
			// swapped after this check (by a process that may write its
			// folder) would otherwise grant its new target.
			if r, err := filepath.EvalSymlinks(path); err == nil {
				path = r
			}
			*set.dst = append(*set.dst, path)
		}
	}
	home := in.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home != "" && slices.ContainsFunc(resolveAll([]string{home}), func(h string) bool { return within(h, p.Write) }) {
		p.Home = "" // write grants the real HOME: the server keeps it
	}
	for _, dir := range systemPlaces {
		if _, err := os.Stat(dir); err == nil {
			p.Read = grantAround(p.Read, dir, protect, true)
		}
	}
	// A resolv.conf that points elsewhere (systemd-resolved) is read there.
	if t, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && !strings.HasPrefix(t, "/etc/") {
		p.Read = append(p.Read, filepath.Dir(t))
	}
	// The devices a server writes are written; the others are read only:
	// a shared writable mapping of /dev/zero is memory RLIMIT_DATA does
	// not count, and needs the device open for writing.
	for _, d := range devices {
		if _, err := os.Stat(d); err == nil {
			p.Devices = append(p.Devices, d)
		}
	}
	for _, d := range readDevices {
		if _, err := os.Stat(d); err == nil {
			p.Read = append(p.Read, d)
		}
	}
	// What the command needs of its own: the executable's folder, and the
	// package of each argument that is an existing file (node SCRIPT,
	// python FILE). A folder that holds one of colibri's files (a script
	// beside the registry) is not granted; the file alone is. Nor is a
	// folder that is HOME or holds it (a script in ~, a binary in /, a
	// package.json left in ~): that would be the user's every file.
	type own struct{ file, dir string }
	var owns []own
	owns = append(owns, own{in.Argv[0], filepath.Dir(in.Argv[0])})
	// A script's interpreter (#!/opt/node/bin/node) is read by the kernel
	// at execve, under the server's rules: granted as the executable is.
	if interp := interpreter(in.Argv[0]); interp != "" {
		owns = append(owns, own{interp, filepath.Dir(interp)})
	}
	for _, a := range in.Argv[1:] {
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		if !filepath.IsAbs(a) {
			a = filepath.Join(in.Dir, a)
		}
		if st, err := os.Stat(a); err == nil && st.Mode().IsRegular() {
			owns = append(owns, own{a, packageRoot(a, home)})
		}
	}
	for _, o := range owns {
		grant := o.dir
		if tooWide(o.dir, home) || holds(o.dir, protect) != "" {
			grant = o.file
		}
		// The file too: a symbolic link (node_modules/.bin/x) is granted
		// as what it points to, which may lie outside its folder.
		for _, g := range []string{grant, o.file} {
			if holds(g, protect) == "" && !slices.Contains(p.Read, g) {
				p.Read = append(p.Read, g)
				if !within(g, systemPlaces) { // shown: a system place is no news
					p.Auto = append(p.Auto, g)
				}
			}
		}
	}
	if n := planSize(p); n > MaxPlanBytes {
		return nil, "", &Error{Config: true, Msg: fmt.Sprintf(
			"sandbox: the granted paths come to %d bytes together, more than the %d the launcher can be handed (on its command line, with the server's own arguments and environment; the kernel's limit for them all is a quarter of the stack limit, 2 MiB by default): grant fewer or shorter paths", n, MaxPlanBytes)}
	}
	return p, warning, nil
}

// MaxPlanBytes bounds a plan, which travels on the launcher's command
// line: execve(2) refuses arguments and environment over a quarter of the
// stack limit together (E2BIG), which would fail each start as if the
// system were short of something.
const MaxPlanBytes = 64 << 10

// grantAround appends path to read, or, where path holds one of colibri's
// files (the default registry is /usr/local/etc/colibri/external-mcp.json,
// under /usr), everything in it but that file's folder: a system place is
// granted around colibri's own files, and so is not colibri's folder with
// its backups and samples. A file directly in a system place (place true)
// leaves out that file alone.
func grantAround(read []string, path string, protect []string, place bool) []string {
	f := holds(path, protect)
	if f == "" {
		return append(read, path)
	}
	if within(path, protect) {
		return read // a protected file or folder, or inside one
	}
	if !place && slices.ContainsFunc(protect, func(p string) bool { return filepath.Dir(p) == path }) {
		return read // the folder of one of colibri's files
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return read
	}
	for _, e := range ents {
		read = grantAround(read, filepath.Join(path, e.Name()), protect, false)
	}
	return read
}

// HomeDir is the private HOME of server under colibri's state folder.
func HomeDir(stateDir, server string) string { return filepath.Join(stateDir, "home", server) }

// packageRoot is the folder a script's package lives in: the folder that
// holds the outermost node_modules on its path (its dependencies are
// there), else the nearest folder with a package manifest, else the
// script's own folder. The search for a manifest stops below home, and
// below a folder that another user may write (/tmp: anyone may leave a
// setup.py there, which would grant the whole tree).
func packageRoot(file, home string) string {
	dir := filepath.Dir(file)
	parts := strings.Split(dir, string(filepath.Separator))
	for i, part := range parts {
		if part == "node_modules" && i > 0 {
			if root := strings.Join(parts[:i+1], string(filepath.Separator)); !tooWide(root, home) {
				return root
			}
			break
		}
	}
	for d := dir; !tooWide(d, home); d = filepath.Dir(d) {
		for _, m := range []string{"package.json", "pyproject.toml", "setup.py", "go.mod"} {
			if _, err := os.Stat(filepath.Join(d, m)); err == nil {
				return d
			}
		}
	}
	return dir
}

// tooWide reports whether dir is too wide to grant as a command's own
// folder: the root, home or a folder that holds it, or a folder that a
// user other than colibri's (and root) may write or has made.
func tooWide(dir, home string) bool {
	return dir == filepath.Dir(dir) || home != "" && isWithin(home, dir) || othersWrite(dir)
}

// othersWrite reports whether a user other than colibri's and root may
// write dir or owns it: a folder writable by its group or by all (/tmp),
// or owned by another user.
func othersWrite(dir string) bool {
	st, err := os.Stat(dir)
	if err != nil {
		return true
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return !ok || sys.Uid != 0 && sys.Uid != uint32(os.Geteuid()) || st.Mode().Perm()&0o022 != 0
}

// interpreter is the absolute path a script's "#!" line names, or "".
func interpreter(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 256) // the kernel reads no more of the line (BINPRM_BUF_SIZE)
	n, _ := f.Read(b)
	line, ok := strings.CutPrefix(string(b[:max(n, 0)]), "#!")
	if !ok {
		return ""
	}
	line, _, _ = strings.Cut(line, "\n")
	fields := strings.Fields(line)
	if len(fields) == 0 || !filepath.IsAbs(fields[0]) {
		return ""
	}
	return filepath.Clean(fields[0])
}

// requestHome is the private HOME of one process, beside its TMPDIR and
// removed with it.
func requestHome(tmp string) string { return tmp + ".home" }

// resolveAll resolves symbolic links in paths, keeping each path as it is
// too (a file that does not exist yet, such as an audit log, counts).
func resolveAll(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" || p == "-" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// holds returns the first of files that lies within dir (or is dir), or
// within which dir lies (a path inside a protected folder), or "".
func holds(dir string, files []string) string {
	dirs := resolveAll([]string{dir})
	for _, f := range files {
		for _, d := range dirs {
			if isWithin(f, d) || isWithin(d, f) {
				return f
			}
		}
	}
	return ""
}

// within reports whether path lies within one of dirs.
func within(path string, dirs []string) bool {
	for _, d := range dirs {
		if isWithin(path, d) {
			return true
		}
	}
	return false
}

func isWithin(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// randomName names a private TMPDIR: unique, so that removing one process's
// folder never removes another's (a pid may be reused at once). It need not
// be secret: its parent is colibri's, mode 0700, and no server may write
// there.
func randomName() string { return strconv.FormatUint(rand.Uint64(), 36) }
