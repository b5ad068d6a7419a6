package host

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// ReadResource reads one resource of srv (aggregate mode serves the ui://
// resources of MCP Apps tools this way): on a session leased as a call's
// is, within the call timeout, offered no capability of the caller's (a
// read asks the caller nothing). Starting and listing are retried as for a
// call; the read itself is not.
func (h *Host) ReadResource(ctx context.Context, srv *registry.Server, uri string, caller *Caller) (*mcp.ReadResourceResult, error) {
	caller = caller.listing()
	ctx, leave, err := h.enter(ctx, srv.Name)
	if err != nil {
		return nil, err
	}
	defer leave()
	l, err := h.lease(ctx, srv, caller, false)
	if err != nil {
		return nil, err
	}
	res, err := l.s.readResource(ctx, uri)
	l.end(err)
	return res, err
}

func (s *session) readResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	d := s.srv.CallTimeoutOr(s.h.opts.Timeout)
	ph := newPhase(ctx, d, d)
	defer ph.stop()
	defer s.endOnExit(ph)()
	defer s.up.unstick(ph.ctx)()
	pctx := s.up.track(ph.ctx)
	res, err := s.cs.ReadResource(pctx, &mcp.ReadResourceParams{URI: uri})
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && ctx.Err() == nil && !ph.expired() && !s.up.oversize() {
		return nil, rpcErr // the server's own answer (resource not found…): passed on as it is
	}
	if err != nil {
		return nil, s.classify(failure.PhaseCall, err, ctx, ph, pctx)
	}
	return res, nil
}
