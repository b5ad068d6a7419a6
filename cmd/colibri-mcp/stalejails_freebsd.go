package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/colibri-mcp/colibri-mcp/jail"
)

// removeStaleJails removes, as serve starts, the ephemeral jails a colibri
// killed with SIGKILL left behind (jail.Stale), through the jail privilege
// mode in force; each removal is logged. Bounded: a jls or jail -r that
// hangs does not hold the start.
func removeStaleJails(ctx context.Context, s *settings) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list := jail.ListArgv()
	out, err := exec.CommandContext(ctx, list[0], list[1:]...).Output()
	if err != nil {
		s.logger.Debug("cannot list jails to remove those of a colibri that is gone", "err", err)
		return
	}
	for _, name := range jail.Stale(string(out), os.Getpid(), alive) {
		argv, err := jail.Remove(name, s.jailPriv, s.jailHelper)
		if err != nil {
			continue
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		if output, err := cmd.CombinedOutput(); err != nil {
			s.logger.Warn("cannot remove the ephemeral jail of a colibri that is gone", "jail", name, "argv", argv, "err", err, "output", string(output))
			continue
		}
		s.logger.Info("removed the ephemeral jail of a colibri that is gone", "jail", name)
	}
}

// alive reports whether a process pid exists (kill(2) with signal 0: EPERM
// is another user's, alive).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
