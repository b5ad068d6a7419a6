package host

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// warmLease is the lease of srv's warm session, started if need be. A
// tools/list that failed transiently is tried again (on a new session when
// the old one is gone); starting the session retries by itself.
func (h *Host) warmLease(ctx context.Context, srv *registry.Server, caller *session.Caller, fresh bool) (*lease, error) {
	for attempt := 1; ; attempt++ {
		w, s, err := h.pool.Acquire(ctx, srv, caller)
		if err != nil {
			return nil, err
		}
		tools, cached, err := w.Tools(ctx, s, caller, fresh)
		if err == nil {
			return &lease{s: s, tools: tools, cached: cached,
				relist: func(ctx context.Context) ([]*mcp.Tool, error) {
					tools, _, err := w.Tools(ctx, s, caller, true)
					return tools, err
				},
				end: func(err error) { w.Release(s, err) },
			}, nil
		}
		w.Release(s, err)
		var e *failure.Error
		if !errors.As(err, &e) || !e.Retry.Transient || e.Phase != failure.PhaseList ||
			attempt >= h.opts.Retries || e.Retry.After > srv.Timeout(h.opts.Timeout) {
			if e != nil && attempt > 1 {
				e.Attempts = attempt
			}
			return nil, err
		}
		h.log.WarnContext(ctx, "retrying", "server", srv.Name, "phase", e.Phase, "attempt", attempt+1, "err", err)
		h.retried(srv.Name, e.Phase)
		if err := h.sleep(ctx, attempt, e.Retry.After); err != nil {
			e.Attempts = attempt
			return nil, e
		}
	}
}
