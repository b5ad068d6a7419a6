package host

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Request runs do, one request of MCP beside tools/call (prompts,
// resources, templates, completion, subscriptions: serve --only), on a
// session of srv leased as a call's is: a per_request server is started
// for it and torn down after, a persistent one's warm session is used and
// kept. Starting and listing are retried as for a call; do itself is not.
// The session is offered caller's capabilities, so that what the server
// asks while answering (sampling, elicitation, roots) reaches the caller.
func (h *Host) Request(ctx context.Context, srv *registry.Server, caller *session.Caller, do func(context.Context, *session.Session) error) error {
	return h.leased(ctx, srv, caller, false, func(ctx context.Context, l *lease) error { return do(ctx, l.s) })
}

// ListToolsFor is ListTools on a session offered caller's capabilities
// (serve --only: the list the server would give that caller directly),
// read from the server, not a cache.
func (h *Host) ListToolsFor(ctx context.Context, srv *registry.Server, caller *session.Caller) ([]*mcp.Tool, error) {
	if caller.Capabilities() == "" {
		return h.ListTools(ctx, srv, caller)
	}
	return h.listOn(ctx, srv, caller)
}

// CallTimeout is how long one request of srv may run once sent
// (call_timeout_ms, else the host's timeout): tools/call's, and every
// request of Request's. A 2026-07-28 caller's continuation waits for the
// caller's input no longer (tools/caller's Rounds).
func (h *Host) CallTimeout(srv *registry.Server) time.Duration {
	return srv.CallTimeoutOr(h.opts.Timeout)
}
