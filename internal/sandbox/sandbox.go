// Package sandbox confines a hosted server on Linux with the kernel's own
// unprivileged mechanisms (docs/security.md#on-linux-a-sandboxed-server-keeps-to-what-its-entry-grants): Landlock for the
// filesystem, TCP and the scoping of signals and abstract Unix sockets,
// a seccomp filter for the sockets Landlock does not cover, no_new_privs,
// an empty capability set, and resource limits.
//
// Go cannot run code between fork and exec, so colibri re-executes itself
// as a launcher that confines itself and then execve(2)s the server; a
// first launcher, the subreaper of the server's tree, starts it and stays
// to end the tree when the server or colibri ends (even a SIGKILLed
// colibri: early's reap_linux.go). The launcher is internal/sandbox/early, which main
// imports for its init; it is handed exactly what to apply, a Plan with
// its Landlock rights and seccomp programs made here, in its argv; it
// parses no registry and imports nothing but syscall.
//
//	plan, err := sandbox.Prepare(sandbox.Input{Server: "fs", Spec: spec, Argv: argv, ...})
//	argv = sandbox.Argv(launcherPath, plan, argv) // start this instead
//	// in package main:
//	import _ "github.com/colibri-mcp/colibri-mcp/internal/sandbox/early"
package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/sandbox/early"
)

// LauncherArg is argv[1] of colibri run as the launcher. It is not a
// command of the CLI: nothing but colibri itself starts it.
const LauncherArg = early.Marker

// Plan is what the launcher applies, resolved: absolute paths only.
type Plan struct {
	// Read are the file hierarchies the server may read and execute.
	Read []string
	// Auto are the grants among Read that the command's own files made
	// (the executable's folder, each file argument's package), for check
	// and the servers tool to show; the launcher is not handed them twice.
	Auto []string
	// Write are the file hierarchies it may read, write and execute.
	Write []string
	// Devices are character devices it may read and write.
	Devices []string
	// Home is its private HOME (created 0700 when missing); "" when
	// Write grants the real one.
	Home string
	// Tmp is the process's private TMPDIR, a folder of its own (a random
	// name under the server's), which the launcher creates and colibri
	// removes once the process is reaped (Cleanup).
	Tmp string
	// Unix are the pathname Unix sockets (or folders of them) the server
	// may connect to beyond those inside Write: Landlock's rule from ABI
	// 9; below it every Unix socket is refused (seccomp) unless UnixOpen.
	Unix []string
	// UnixOpen leaves every pathname Unix socket reachable: what
	// best_effort runs with where the kernel cannot tell socket paths
	// apart (Landlock below ABI 9) and Unix grants a path.
	UnixOpen bool
	// Net false forbids every IPv4 and IPv6 socket.
	Net bool
	// ProxyPort, with a "net" list, is the egress proxy's port: the one
	// TCP port the server may connect to (Landlock), no UDP (seccomp).
	ProxyPort int
	// ProxySock, with a "net" list where user namespaces are available, is
	// the egress proxy's Unix socket: the launcher, which colibri starts
	// in a user and network namespace of its own, forwards 127.0.0.1:
	// ProxyPort inside it there; "": the per-port fallback.
	ProxySock string
	// MemoryMB bounds each process's private writable memory
	// (RLIMIT_DATA); 0: no bound.
	MemoryMB int64
	// CPUSeconds bounds each process's CPU time (RLIMIT_CPU); 0: no bound.
	CPUSeconds int64
	// OpenFiles bounds each process's descriptors (RLIMIT_NOFILE, soft and
	// hard), and so the kernel's socket buffers it holds; 0: as inherited.
	OpenFiles int64
	// ABI is the Landlock ABI the launcher uses at most: what colibri found
	// in the kernel, or less (0: no Landlock, what best_effort gets on a
	// kernel without it, and what tests use to play such a kernel).
	ABI int
}

// IsLauncher reports whether args are those of colibri run as the launcher.
func IsLauncher(args []string) bool { return early.IsLauncher(args) }

// The launcher acts from the init of internal/sandbox/early, which reads
// its arguments from /proc/self/cmdline; where that could not be read, it
// acts here, with os.Args, once more packages have been initialized.
func init() { early.Run(os.Args) }

// Argv is the command line that starts argv confined by p: the launcher
// (colibri's own binary), its marker, the plan (one KEY=VALUE argument
// each: internal/sandbox/early), the end of the plan, then argv as it was.
// The plan is handed ready: the Landlock access rights and the seccomp
// programs are made here, so that the launcher only makes system calls.
func Argv(launcher string, p *Plan, argv []string) []string {
	return append(append([]string{launcher, LauncherArg}, p.args()...), argv...)
}

// args are the plan's arguments, End included.
func (p *Plan) args() []string {
	var out []string
	add := func(key, val string) { out = append(out, key+"="+val) }
	add(early.KeyTmp, p.Tmp)
	if p.Home != "" {
		add(early.KeyHome, p.Home)
	}
	for _, set := range []struct {
		key   string
		paths []string
	}{{early.KeyRead, p.Read}, {early.KeyWrite, p.Write}, {early.KeyDevice, p.Devices}, {early.KeyUnix, p.Unix}} {
		for _, path := range set.paths {
			add(set.key, path)
		}
	}
	if p.Net {
		add(early.KeyNet, "1")
	}
	if p.ProxyPort > 0 {
		add(early.KeyPort, strconv.Itoa(p.ProxyPort))
	}
	if p.ProxySock != "" {
		add(early.KeyNetns, p.ProxySock)
	}
	if p.MemoryMB > 0 {
		add(early.KeyMem, strconv.FormatInt(p.MemoryMB, 10))
	}
	if p.CPUSeconds > 0 {
		add(early.KeyCPU, strconv.FormatInt(p.CPUSeconds, 10))
	}
	if p.OpenFiles > 0 {
		add(early.KeyNofile, strconv.FormatInt(p.OpenFiles, 10))
	}
	add(early.KeyABI, strconv.Itoa(p.ABI))
	out = append(out, p.enforcement()...)
	return append(out, early.End)
}

// planSize is the length of the plan's arguments on a command line.
func planSize(p *Plan) int {
	n := 0
	for _, a := range p.args() {
		n += len(a) + 1
	}
	return n
}

// parseArgv splits the launcher's argv into its plan and the server's argv.
func parseArgv(args []string) (*Plan, []string, error) {
	ep, err := early.Parse(args)
	if err != nil {
		return nil, nil, err
	}
	return &Plan{Read: ep.Read, Write: ep.Write, Devices: ep.Devices, Unix: ep.Unix, Home: ep.Home, Tmp: ep.Tmp, Net: ep.Net,
		MemoryMB: ep.MemoryMB, CPUSeconds: ep.CPUSeconds, OpenFiles: ep.OpenFiles, ABI: ep.ABI, ProxyPort: int(ep.Port), ProxySock: ep.ProxySock}, ep.Argv, nil
}

// Cleanup removes what the launcher made for a process, given the argv it
// was started with: its private TMPDIR, and its HOME where it is the
// process's own ("home": "per_request"). It does nothing for a process that
// was not started through the launcher. Call it once the process has been
// reaped.
func Cleanup(args []string) error {
	p, _, err := parseArgv(args)
	if err != nil || !filepath.IsAbs(p.Tmp) {
		return nil
	}
	if p.Home == requestHome(p.Tmp) { // "home": "per_request"
		if err := os.RemoveAll(p.Home); err != nil {
			return err
		}
	}
	return os.RemoveAll(p.Tmp)
}

// Limits describes the resource limits of a process started with args, for
// a message about its end ("max_memory_mb 64"), or "" when it has none.
func Limits(args []string) string {
	p, _, err := parseArgv(args)
	if err != nil {
		return ""
	}
	var l []string
	if p.MemoryMB > 0 {
		l = append(l, fmt.Sprintf("max_memory_mb %d", p.MemoryMB))
	}
	if p.CPUSeconds > 0 {
		l = append(l, fmt.Sprintf("max_cpu_seconds %d", p.CPUSeconds))
	}
	return strings.Join(l, ", ")
}
