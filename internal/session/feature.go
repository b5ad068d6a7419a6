package session

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
)

// The rest of MCP, beside tools: prompts, resources and their templates,
// completion, subscriptions (serve --only, docs/protocol.md). Each is one
// request of the hosted session, within the call timeout, relayed as a
// call is (the server's progress, logs and requests reach the caller).

// Request sends one request of the session's client, do, on caller's
// behalf within the call timeout (progress from the server extends it, as
// for a call), and classifies what goes wrong as CallTool does, in phase
// method. A *failure.Error of do's own is returned as it is. The server's
// own JSON-RPC error answer (prompt not found, a
// resource it does not have) is returned as it is, a *jsonrpc.Error.
func Request[R any](ctx context.Context, s *Session, caller *Caller, method string, do func(context.Context, *mcp.ClientSession) (R, error)) (R, error) {
	var zero R
	d := s.cfg.CallTimeout
	ph := NewTimer(ctx, d, 10*d)
	defer ph.Stop()
	defer s.endOnExit(ph)()
	if caller == nil {
		caller = &Caller{}
	}
	defer s.routes.begin(ph.ctx, caller, "", ph.kick)()
	defer s.up.Unstick(ph.ctx)()
	pctx := s.up.Track(ph.ctx)
	res, err := do(pctx, s.cs)
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && ctx.Err() == nil && !ph.Expired() && !s.up.Oversize() && s.up.ToolError(pctx) {
		return zero, &jsonrpc.Error{Code: rpcErr.Code, Message: s.up.Secrets().Apply(rpcErr.Message), Data: rpcErr.Data}
	}
	var own *failure.Error
	if errors.As(err, &own) {
		return zero, own // do refused it itself (a pin, a bound), before or after its request
	}
	if err != nil {
		return zero, s.classify(failure.Phase(method), err, ctx, ph, pctx)
	}
	return res, nil
}

// Modern reports whether the session speaks 2026-07-28 (no session, no
// logging/setLevel, no subscriptions of its own).
func (s *Session) Modern() bool { return s.modern }
