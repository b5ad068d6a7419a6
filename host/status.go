package host

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerStatus is what the host knows of one server's health, for metrics.
type ServerStatus struct {
	Warm        int  // warm sessions up
	CircuitOpen bool // a persistent server failing fast after repeated failures
	Up, Tried   bool // whether its last start succeeded; Tried is false until one was made
	Spare       SpareStatus
}

// Status describes server now. It starts nothing.
func (h *Host) Status(server string) ServerStatus {
	st := ServerStatus{Warm: len(h.pool.status(server)), CircuitOpen: h.pool.circuitOpen(server, time.Now()), Spare: h.Spares(server)}
	if v, ok := h.up.Load(server); ok {
		st.Up, st.Tried = v.(bool), true
	}
	return st
}

// Processes is how many hosted processes are alive (their slots taken).
func (h *Host) Processes() int { return len(h.slots) }

// circuitOpen reports whether any warm server of server fails fast now.
func (p *pool) circuitOpen(server string, now time.Time) bool {
	p.mu.Lock()
	ws := make([]*warm, 0, len(p.servers))
	for key, w := range p.servers {
		if key.server == server {
			ws = append(ws, w)
		}
	}
	p.mu.Unlock()
	for _, w := range ws {
		w.mu.Lock()
		open := now.Before(w.openUntil)
		w.mu.Unlock()
		if open {
			return true
		}
	}
	return false
}

// started notes whether a start of server succeeded. A start that never
// had its chance (cancelled, no process slot, colibri shutting down) says
// nothing of the server, and is not noted.
func (h *Host) started(server string, err error) {
	if err != nil {
		switch failure.KindOf(err) {
		case failure.KindCancelled, failure.KindOverloaded, failure.KindUnavailable:
			return
		}
	}
	h.up.Store(server, err == nil)
}

func (h *Host) retried(server string, phase failure.Phase) {
	if h.opts.OnRetry != nil {
		h.opts.OnRetry(server, phase)
	}
}

// observe is the client middleware that times each request sent to a
// hosted server, for OnRequest. Notifications are not requests.
func (h *Host) observe(server string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			start := time.Now()
			res, err := next(ctx, method, req)
			h.opts.OnRequest(server, method, time.Since(start), RequestErrorType(res, err))
			return res, err
		}
	}
}

// RequestErrorType says how a request to a hosted server failed, in the
// words of the MCP semantic conventions' error.type: "" when it succeeded,
// "tool_error" for a tools/call answered with isError, the JSON-RPC error
// code for an error answer, "timeout" or "cancelled" when its context
// ended, "transport" when the connection failed.
func RequestErrorType(res mcp.Result, err error) string {
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil:
		if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
			return "tool_error"
		}
		return ""
	case errors.As(err, &rpcErr):
		return strconv.FormatInt(rpcErr.Code, 10)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errPhaseTimeout) || errors.Is(err, errCeiling):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "transport"
}
