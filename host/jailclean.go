package host

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/jail"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// ephemeralName names the ephemeral jail of one process: colibri's pid and
// a sequence number, unique on the host while colibri runs.
func (h *Host) ephemeralName() string {
	return fmt.Sprintf("colibri_%d_%d", os.Getpid(), h.seq.Add(1))
}

// checkJexecCwd refuses cwd with jail.name where the installed jexec(8)
// lacks -d (older FreeBSD releases), before anything starts.
func checkJexecCwd(srv *registry.Server, pathList string) error {
	path, err := lookPath("jexec", pathList)
	if err != nil {
		return nil // not found: the start says so
	}
	if ok, err := jail.JexecHasCwd(path); err == nil && !ok {
		return &failure.Error{Kind: failure.KindJail, Server: srv.Name, Phase: failure.PhaseSpawn,
			Err:  fmt.Errorf("cwd %s needs jexec -d, which %s lacks (this FreeBSD release's jexec(8) has no -d)", srv.Cwd, path),
			Hint: "upgrade FreeBSD, or drop cwd and pass the directory in the server's own arguments"}
	}
	return nil
}

// jailRemoval is the command that removes the ephemeral jail cmd creates,
// through the same privilege mode, or nil for any other command.
func (h *Host) jailRemoval(cmd *exec.Cmd) []string {
	name := jail.EphemeralName(cmd.Args)
	if name == "" {
		return nil
	}
	argv, err := jail.Remove(name, h.opts.JailPriv, h.opts.JailHelper)
	if err != nil {
		return nil
	}
	if !strings.HasPrefix(argv[0], "/") {
		if path, err := lookPath(argv[0], envValue(cmd.Env, "PATH")); err == nil {
			argv[0] = path
		}
	}
	return argv
}

// removeJail runs jail -r for a process colibri had to kill: jail(8) holds
// the jail with a temporary persist until its command returns, so an
// ephemeral jail would otherwise outlive its request (and under mdo or the
// helper, jail(8) is root's, out of an unprivileged colibri's reach).
// Bounded; run once per process.
func (p *proc) removeJail() {
	if p.jailRemove == nil {
		return
	}
	p.jailOnce.Do(func() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, p.jailRemove[0], p.jailRemove[1:]...)
			cmd.Env = p.cmd.Env
			if out, err := cmd.CombinedOutput(); err != nil {
				p.log.Warn("cannot remove the ephemeral jail", "argv", p.jailRemove, "err", err, "output", strings.TrimSpace(string(out)))
				return
			}
			p.log.Debug("removed the ephemeral jail", "argv", p.jailRemove)
		}()
	})
}
