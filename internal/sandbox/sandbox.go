// Package sandbox confines a hosted server on Linux with the kernel's own
// unprivileged mechanisms (CONTRACT.md section 14): Landlock for the
// filesystem, TCP and the scoping of signals and abstract Unix sockets,
// a seccomp filter for the sockets Landlock does not cover, no_new_privs,
// an empty capability set, and resource limits.
//
// Go cannot run code between fork and exec, so colibri re-executes itself
// as a launcher that confines itself and then execve(2)s the server (the
// pid stays the same, so the process-tree kill, Pdeathsig and the reaper
// see one process). The launcher is handed exactly what to apply, a Plan,
// in its argv; it parses no registry and imports no MCP code.
//
//	plan, err := sandbox.Prepare(sandbox.Input{Server: "fs", Spec: spec, Argv: argv, ...})
//	argv = sandbox.Argv(launcherPath, plan, argv) // start this instead
//	// in main, before anything else:
//	if sandbox.IsLauncher(os.Args) { sandbox.Launch(os.Args) } // never returns
package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LauncherArg is argv[1] of colibri run as the launcher. It is not a
// command of the CLI: nothing but colibri itself starts it.
const LauncherArg = "__colibri_sandbox_launcher"

// Plan is what the launcher applies, resolved: absolute paths only.
type Plan struct {
	// Read are the file hierarchies the server may read and execute.
	Read []string `json:"read,omitempty"`
	// Write are the file hierarchies it may read, write and execute.
	Write []string `json:"write,omitempty"`
	// Devices are character devices it may read and write.
	Devices []string `json:"dev,omitempty"`
	// Home is its private HOME (created 0700 when missing); "" when
	// Write grants the real one.
	Home string `json:"home,omitempty"`
	// Tmp is the process's private TMPDIR, a folder of its own (a random
	// name under the server's), which the launcher creates and colibri
	// removes once the process is reaped (Cleanup).
	Tmp string `json:"tmp"`
	// Net false forbids every IPv4 and IPv6 socket.
	Net bool `json:"net"`
	// MemoryMB bounds each process's private writable memory
	// (RLIMIT_DATA); 0: no bound.
	MemoryMB int64 `json:"mem,omitempty"`
	// CPUSeconds bounds each process's CPU time (RLIMIT_CPU); 0: no bound.
	CPUSeconds int64 `json:"cpu,omitempty"`
	// ABI is the Landlock ABI the launcher uses at most: what colibri found
	// in the kernel, or less (0: no Landlock, what best_effort gets on a
	// kernel without it, and what tests use to play such a kernel).
	ABI int `json:"abi"`
}

// IsLauncher reports whether args are those of colibri run as the launcher.
func IsLauncher(args []string) bool { return len(args) > 1 && args[1] == LauncherArg }

// Argv is the command line that starts argv confined by p: the launcher
// (colibri's own binary), its marker, the plan, then argv as it was.
func Argv(launcher string, p *Plan, argv []string) []string {
	b, _ := json.Marshal(p)
	return append([]string{launcher, LauncherArg, string(b)}, argv...)
}

// parseArgv splits the launcher's argv into its plan and the server's argv.
func parseArgv(args []string) (*Plan, []string, error) {
	if !IsLauncher(args) || len(args) < 4 {
		return nil, nil, fmt.Errorf("usage: %s PLAN COMMAND [ARGS…] (colibri starts this itself)", LauncherArg)
	}
	var p Plan
	if err := json.Unmarshal([]byte(args[2]), &p); err != nil {
		return nil, nil, fmt.Errorf("reading the plan: %w", err)
	}
	if !filepath.IsAbs(args[3]) {
		return nil, nil, fmt.Errorf("the command %q is not an absolute path", args[3])
	}
	return &p, args[3:], nil
}

// Cleanup removes what the launcher made for a process, given the argv it
// was started with: its private TMPDIR. It does nothing for a process that
// was not started through the launcher. Call it once the process has been
// reaped.
func Cleanup(args []string) error {
	p, _, err := parseArgv(args)
	if err != nil || !filepath.IsAbs(p.Tmp) {
		return nil
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
