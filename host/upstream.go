package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/launch"
	"github.com/colibri-mcp/colibri-mcp/internal/remote"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/statedir"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// open starts srv and initializes a session with it: one attempt, no
// retry. On failure nothing is left running (the group is killed and reaped
// in the background).
func (h *Host) open(ctx context.Context, srv *registry.Server, caller *session.Caller) (_ *session.Session, err error) {
	defer func() { h.started(srv.Name, err) }()
	timeout := srv.Timeout(h.opts.Timeout)
	timer := session.NewTimer(ctx, timeout, 0)
	defer timer.Stop()
	if ctx.Err() != nil {
		// The caller has given up already: start nothing. (A free process
		// slot is taken whatever the context, and a warm request whose
		// shared start was cancelled comes back here to start it itself.)
		return nil, &failure.Error{Kind: failure.KindCancelled, Server: srv.Name, Phase: failure.PhaseSpawn, Err: session.ErrCancelled}
	}
	up, err := h.startUpstream(ctx, timer.Context(), srv)
	if err != nil {
		return nil, err
	}
	key := srv.ProcessKey()
	cfg := h.sessionConfig(srv, h.versions.Ask(key))
	if f := h.notify.Load(); f != nil && *f != nil {
		part := ""
		if caller != nil {
			part = caller.Partition
		}
		cfg.Notified = func(method string, params json.RawMessage) { (*f)(srv, part, method, params) }
	}
	s, err := session.Open(ctx, timer, cfg, up, caller)
	if err != nil {
		runnerHint(srv, err)
		return nil, err
	}
	init := s.InitializeResult()
	serverVersion := ""
	if init.ServerInfo != nil {
		serverVersion = init.ServerInfo.Version
	}
	h.versions.Learn(key, serverVersion, init.ProtocolVersion)
	return s, nil
}

// runnerHint puts launch.RunnerHint (a package runner's silent download
// reads like a hung server) and launch.SandboxDeniedHint (the sandbox's
// refusal reads like a server bug) first in the hint of a failed
// initialize.
func runnerHint(srv *registry.Server, err error) {
	var fe *failure.Error
	if !errors.As(err, &fe) || fe.Phase != failure.PhaseInitialize {
		return
	}
	runner := launch.RunnerHint(srv, fe.Kind == failure.KindTimeout)
	if runner != "" && noNetwork(srv) {
		// More time fetches nothing without a network: the timeout's
		// "raise timeout_ms" would send the user the wrong way.
		fe.Hint = ""
	}
	for _, h := range []string{runner, launch.SandboxDeniedHint(srv, fe.StderrTail)} {
		if h == "" {
			continue
		}
		if fe.Hint != "" {
			h += "; " + fe.Hint
		}
		fe.Hint = h
	}
}

// noNetwork reports whether srv's sandbox has no network at all ("net":
// false; a list of destinations may hold the package registry).
func noNetwork(srv *registry.Server) bool {
	sb := srv.Sandbox
	return sb != nil && !sb.Off && sb.Destinations == nil && sb.Net != nil && !*sb.Net
}

// sessionConfig is what a session of srv needs to know.
func (h *Host) sessionConfig(srv *registry.Server, version string) session.Config {
	cfg := session.Config{
		Server:          srv.Name,
		Timeout:         srv.Timeout(h.opts.Timeout),
		CallTimeout:     srv.CallTimeoutOr(h.opts.Timeout),
		MaxResultBytes:  h.opts.MaxResultBytes,
		TerminateGrace:  h.opts.TerminateGrace,
		Version:         h.opts.Version,
		ProtocolVersion: version,
		ProbeTimeout:    h.opts.ProbeTimeout,
		Bulk:            h.opts.Bulk,
		Background:      h.background,
	}
	if h.opts.OnRequest != nil {
		cfg.OnRequest = func(method string, took time.Duration, errorType string) {
			h.opts.OnRequest(srv.Name, method, took, errorType)
		}
	}
	cfg.Listed = func(tools []*mcp.Tool) { h.listed(srv, tools) }
	if srv.URL == "" {
		cfg.Release = func() {
			h.releaseSlot()
			h.reapAdopted()
		}
	}
	return cfg
}

// startUpstream starts what srv names: its process (a spare, or one
// started now, holding a process slot waited for within phase) or, for a
// url entry, a remote connection. On failure nothing is left running.
func (h *Host) startUpstream(ctx, phase context.Context, srv *registry.Server) (session.Upstream, error) {
	if err := h.stateProblem(srv); err != nil {
		return nil, err
	}
	if srv.URL != "" {
		r, err := h.dialRemote(srv)
		if err != nil {
			return nil, err // not a nil *remote.Upstream in an interface
		}
		return r, nil
	}
	if p, err := h.takeSpare(ctx, srv); p != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	if err := h.acquireSlot(phase, srv.Name); err != nil {
		return nil, err
	}
	cmd, secrets, err := h.launch.Command(srv)
	if err != nil {
		h.releaseSlot()
		return nil, err
	}
	p, err := h.start(ctx, srv, cmd, secrets)
	if err != nil {
		h.releaseSlot()
		return nil, err
	}
	return p, nil
}

// dialRemote prepares srv's remote upstream (internal/remote).
func (h *Host) dialRemote(srv *registry.Server) (*remote.Upstream, error) {
	return remote.Dial(srv, remote.UpstreamOptions{
		Getenv: h.launch.Getenv, OAuth: h.opts.OAuth, MaxResultBytes: h.opts.MaxResultBytes,
		Timeout: srv.Timeout(h.opts.Timeout), Log: h.log,
	})
}

// The remote upstream satisfies session.Upstream structurally.
var _ session.Upstream = (*remote.Upstream)(nil)

// stateProblem is a config failure when srv needs the state folder and it
// cannot be used (Options.StateErr), with the folder's own words.
func (h *Host) stateProblem(srv *registry.Server) error {
	if h.opts.StateErr == nil {
		return nil
	}
	what := statedir.Needs(nil, srv, false)
	if what == "" {
		return nil
	}
	return &failure.Error{Kind: failure.KindConfig, Server: srv.Name, Phase: failure.PhaseSpawn,
		Err: fmt.Errorf("%w (needed for %s)", h.opts.StateErr, what)}
}
