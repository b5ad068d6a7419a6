package host

import (
	"context"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// upstream is what a session talks MCP to: a hosted process (*proc) or a
// remote server over HTTP (*remoteUp). Like go-plugin's runner.Runner, it
// gives the session a transport, says when it is done, diagnoses its own
// failures into the contract's kinds, and can be stopped and killed; every
// other layer of host (request, warm pool, retries, relay, list cache,
// schema checks) works through it alone.
type upstream interface {
	// transport is the MCP transport to connect the client session over.
	transport() mcp.Transport
	// done is closed once the upstream has ended: the process was reaped,
	// or the remote session is gone for good.
	done() <-chan struct{}
	// ended reports whether it has ended, waiting at most d for it.
	ended(d time.Duration) bool
	// endedWithError reports whether it ended of its own accord with an
	// error (a process's status other than 0): the phase under way ends at
	// once rather than at its timeout.
	endedWithError() bool
	// describeEnd says how it ended ("exited with status 1").
	describeEnd() string
	// read is how much was read from it so far (MaxResultBytes).
	read() int64
	// oversize reports whether one message passed MaxResultBytes.
	oversize() bool
	// track returns the context a phase's requests run under, with what
	// the upstream needs to diagnose that phase later.
	track(ctx context.Context) context.Context
	// diagnose classifies err, the failure of phase (run under ctx, from
	// track), once colibri's own reasons (too large, timeout, cancelled)
	// are ruled out: it sets e's failure.Kind, Err, Hint and retry flags.
	diagnose(ctx context.Context, e *failure.Error, phase failure.Phase, err error)
	// toolError reports whether a JSON-RPC error that tools/call returned
	// under ctx is the hosted tool's own answer (rather than a refusal of
	// the transport's, such as an HTTP error status with a JSON-RPC body).
	toolError(ctx context.Context) bool
	// tail is the upstream's last words (a process's stderr tail), redacted.
	tail() string
	// unstick guards a phase against writes that no context ends; call
	// the returned func when the phase returns.
	unstick(ctx context.Context) (stop func())
	// lowers reports whether the transport writes the references of the
	// host's bulk table as the strings they stand for (internal/bulk), so
	// that the caller's arguments may be sent with references.
	lowers() bool
	// closeConn drops the connection under the session (pipes, idle HTTP
	// connections) without waiting.
	closeConn()
	// stop ends it politely within grace (twice, for a process), then
	// for good; kill ends it now. Both are safe to repeat.
	stop(grace time.Duration)
	kill()
	// logger carries server= (and pid= for a process).
	logger() *slog.Logger
	// redactor knows the secrets colibri expanded into the upstream's
	// environment or headers.
	redactor() *redactor
	// procID is the process id, 0 for a remote server.
	procID() int
	// usesSlot reports whether it holds one of MaxProcs process slots.
	usesSlot() bool
}

// startUpstream starts what srv names: its process (holding a process slot,
// waited for within the phase) or, for a url entry, a remote connection.
// On failure nothing is left running.
func (h *Host) startUpstream(ctx context.Context, ph *phaseTimer, srv *registry.Server) (upstream, error) {
	if srv.URL != "" {
		return h.newRemote(srv)
	}
	if p, err := h.takeSpare(ctx, srv); p != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	if err := h.acquireSlot(ph.ctx, srv.Name); err != nil {
		return nil, err
	}
	cmd, redact, err := h.buildCmd(srv)
	if err != nil {
		h.releaseSlot()
		return nil, err
	}
	p, err := h.start(ctx, srv, cmd, redact)
	if err != nil {
		h.releaseSlot()
		return nil, err
	}
	return p, nil
}
