package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/sandbox"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// confine wraps argv (its command resolved) in the sandbox launcher when
// srv's entry has a sandbox (internal/sandbox): the argv that starts the
// launcher, which confines itself and then execs argv. It runs where every
// command is built (wrapCmd), so per-request, warm and spare processes get
// the same confinement.
func (h *Host) confine(srv *registry.Server, argv []string) ([]string, error) {
	sb := srv.Confinement()
	if sb == nil {
		return argv, nil
	}
	fail := func(kind failure.Kind, err error, hint string) ([]string, error) {
		return nil, &failure.Error{Kind: kind, Server: srv.Name, Phase: failure.PhaseSpawn, Err: err, Hint: hint}
	}
	if h.opts.Launcher == "" {
		return fail(failure.KindSandbox, errors.New("no sandbox launcher: this colibri was not told its own binary"), "")
	}
	abi := sandbox.DetectABI
	if h.opts.SandboxABI != nil {
		abi = h.opts.SandboxABI
	}
	dir := srv.Cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	home, _ := h.getenv("HOME")
	state := h.stateDir()
	plan, warning, err := sandbox.Prepare(sandbox.Input{
		Server: srv.Name,
		Spec: sandbox.Spec{Read: sb.Read, Write: sb.Write, Net: sb.NetAllowed(),
			MaxMemoryMB: sb.MaxMemoryMB, MaxCPUSeconds: sb.MaxCPUSeconds, BestEffort: sb.BestEffort},
		Argv:     argv,
		Dir:      dir,
		StateDir: state,
		// Every server's private HOME and TMPDIR are colibri's too: no
		// grant may reach another server's.
		Protect: append(slices.Clip(h.opts.SandboxProtect), filepath.Join(state, "home"), filepath.Join(state, "tmp")),
		ABI:     abi(),
		Home:    home,
	})
	var se *sandbox.Error
	switch {
	case errors.As(err, &se) && se.Config:
		return fail(failure.KindConfig, fmt.Errorf("%s: %s", sb.At, se.Msg), "")
	case err != nil:
		return fail(failure.KindSandbox, fmt.Errorf("%s: %w", sb.At, err),
			`set "best_effort": true in the sandbox to run with what the kernel has, or "sandbox": false to run unconfined`)
	}
	if warning != "" {
		if _, told := h.sandboxWarned.LoadOrStore(srv.Name, true); !told {
			h.log.Warn("the sandbox runs without some of its rules", "server", srv.Name, "reason", warning)
		}
	}
	return sandbox.Argv(h.opts.Launcher, plan, argv), nil
}

// stateDir is colibri's state folder: StateDir, else
// $XDG_STATE_HOME/colibri-mcp, else ~/.local/state/colibri-mcp.
func (h *Host) stateDir() string {
	if h.opts.StateDir != "" {
		return h.opts.StateDir
	}
	if v, ok := h.getenv("XDG_STATE_HOME"); ok && filepath.IsAbs(v) {
		return filepath.Join(v, "colibri-mcp")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "colibri-mcp")
}
