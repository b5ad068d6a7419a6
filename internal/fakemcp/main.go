// Command fakemcp is the one fake MCP server of colibri's tests: a small
// binary, built once per test package by internal/testbuild, that plays a
// named server with behaviours no real server shows on demand (hangs,
// floods, crashes, hostility). Each speaks real MCP through go-sdk, except
// where breaking the protocol is the point (the raw fakes).
//
//	fakemcp ok              # a well-behaved server whose tools misbehave on request
//	fakemcp hang-init       # reads stdin, never answers
//	fakemcp fork-storm      # forks 50 SIGTERM-ignoring sleepers inside the call
//
// With FAKEMCP_PIDS set to a folder, every process a fake starts (itself
// included) is recorded there as an empty file named by its pid, so that a
// test can prove that none is left behind.
//
// Run under the name mdo (a setuid copy), it plays mdo(1): it becomes uid
// and gid 65533 and runs the rest of its arguments.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if filepath.Base(os.Args[0]) == "mdo" {
		fakeMdo()
		return
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fakemcp NAME")
		os.Exit(2)
	}
	f, ok := lookup(os.Args[1])
	if !ok {
		fmt.Fprintf(os.Stderr, "fakemcp: no fake server %q\n", os.Args[1])
		os.Exit(2)
	}
	record(os.Getpid())
	f()
	os.Exit(0)
}

// fakeSets are the named fakes, one map a file, so that a feature's hostile
// servers live beside each other rather than in one long table.
var fakeSets = []map[string]func(){fakes, failingFakes, processFakes, secretFakes, listFakes, callerFakes, sandboxFakes, pinFakes, hostileFakes, spareFakes, protocolFakes, daemonFakes, strictFakes, launcherFakes}

// lookup finds the fake called name.
func lookup(name string) (func(), bool) {
	for _, set := range fakeSets {
		if f, ok := set[name]; ok {
			return f, true
		}
	}
	return nil, false
}

// awaitGate returns once the file $FAKEMCP_GATE exists (at once when it is
// not set): the test opens the gate by creating it.
func awaitGate() {
	gate := os.Getenv("FAKEMCP_GATE")
	for gate != "" {
		if _, err := os.Stat(gate); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// record notes pid in $FAKEMCP_PIDS, when set.
func record(pid int) {
	if dir := os.Getenv("FAKEMCP_PIDS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)), nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fakemcp: recording pid:", err)
			os.Exit(1)
		}
	}
}

// spawn starts this binary as the fake name, sharing stdout and stderr, and
// records its pid. A failure to start ends the fake loudly: a test that
// counts on the child must never pass without it.
func spawn(name string) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		fatal(err)
	}
	cmd := exec.Command(self, name)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fatal(fmt.Errorf("starting %s: %w", name, err))
	}
	record(cmd.Process.Pid)
	return cmd
}

// spawnSetsid is spawn, the child leading a session of its own: it leaves
// its parent's process group, as a daemon does.
func spawnSetsid(name string) {
	self, err := os.Executable()
	if err != nil {
		fatal(err)
	}
	cmd := exec.Command(self, name)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fatal(fmt.Errorf("starting %s: %w", name, err))
	}
	record(cmd.Process.Pid)
}

// waitForFile waits until path exists: the tests' gate.
func waitForFile(path string) {
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// report writes what a fake found out to $FAKEMCP_REPORT.
func report(s string) {
	if path := os.Getenv("FAKEMCP_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			fatal(err)
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "fakemcp:", err)
	os.Exit(1)
}

// fakeMdo plays mdo(1) when a setuid-root copy runs under the name mdo: it
// becomes another unprivileged user and runs the rest of its arguments, as
// mdo -u would.
func fakeMdo() {
	const serverUID = 65533
	if err := syscall.Setgid(serverUID); err != nil {
		fatal(fmt.Errorf("fake mdo: setgid: %w", err))
	}
	if err := syscall.Setuid(serverUID); err != nil {
		fatal(fmt.Errorf("fake mdo: setuid: %w", err))
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fatal(fmt.Errorf("fake mdo: %w", err))
	}
	fatal(fmt.Errorf("fake mdo: exec %v: %w", os.Args[1:], syscall.Exec(path, os.Args[1:], os.Environ())))
}
