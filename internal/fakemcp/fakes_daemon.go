package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// daemonFakes: servers that leave a daemon behind, in each shape a real
// one takes (issue 36, G1). The daemon is the sleeper (it ignores SIGHUP,
// SIGTERM and SIGINT), its stdio detached; a middle process starts it and
// exits, so that the kernel hands it to the nearest reaper.
var daemonFakes = map[string]func(){
	// Starts a daemon of the shape $FAKEMCP_DAEMON names (daemonShapes),
	// then serves. The middle process writes "SERVER MIDDLE DAEMON" (the
	// three pids) to $FAKEMCP_REPORT before it exits.
	"daemon": func() {
		if err := spawn("daemon-middle").Wait(); err != nil {
			fatal(fmt.Errorf("middle: %w", err))
		}
		serveTools(nil)
	},
	"daemon-middle": func() {
		shape, ok := daemonShapes[os.Getenv("FAKEMCP_DAEMON")]
		if !ok {
			fatal(fmt.Errorf("FAKEMCP_DAEMON=%q names no shape", os.Getenv("FAKEMCP_DAEMON")))
		}
		if shape.middle != nil {
			if err := shape.middle(); err != nil {
				fatal(fmt.Errorf("middle: %w", err))
			}
		}
		self, err := os.Executable()
		if err != nil {
			fatal(err)
		}
		cmd := exec.Command(self, "sleeper")
		cmd.SysProcAttr = shape.daemon
		if err := cmd.Start(); err != nil {
			fatal(fmt.Errorf("starting the daemon: %w", err))
		}
		record(cmd.Process.Pid)
		report(fmt.Sprintf("%d %d %d", os.Getppid(), os.Getpid(), cmd.Process.Pid))
	},
}

// daemonShapes are the ways a daemon leaves its server: what the middle
// process does before it forks, and how the daemon itself starts.
var daemonShapes = map[string]struct {
	middle func() error
	daemon *syscall.SysProcAttr
}{
	// The classic daemon(3): the middle calls setsid(2), forks, exits. The
	// daemon is in a session and group whose leader is gone: it leads
	// neither, and kill(-pid) does not reach it.
	"setsid": {middle: func() error { _, err := syscall.Setsid(); return err }},
	// The same with setpgid(2): the daemon is in a group whose leader is
	// gone, in the server's session.
	"setpgid": {middle: func() error { return syscall.Setpgid(0, 0) }},
	// A plain double fork: the daemon stays in the server's group.
	"double-fork": {},
	// The daemon leads a session of its own (setsid in the process that
	// stays).
	"leader": {daemon: &syscall.SysProcAttr{Setsid: true}},
}
