// Package caller describes colibri's caller to the host: where a hosted
// server's progress and logs go, which of its requests may be forwarded to
// the caller (sampling, elicitation, roots: only those it advertised), the
// trace context passed on from its _meta, and the logging level each
// caller's session set.
//
//	var levels caller.Levels // levels.Set on each logging/setLevel
//	c := caller.Of(ctx, req, levels.Get(req.Session))
//	res, err := h.CallTool(ctx, srv, name, args, c)
package caller

//lint:file-ignore SA1019 colibri relays sampling, roots and logging between a caller and a hosted server on purpose: both sides still speak the protocol versions that have them (deprecated, not removed, in 2026-07-28).

import (
	"context"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/session"
)

// Of describes the client calling req to the host: where the hosted
// server's progress and logs go (its logs from level, the one the caller's
// session set), and which of its requests may be forwarded (only those the
// caller advertised). Everything is sent under ctx, the caller's own
// request: over Streamable HTTP that is what puts a message on that
// request's stream, and not on another caller's.
func Of(ctx context.Context, req *mcp.CallToolRequest, level mcp.LoggingLevel) *session.Caller {
	return For(ctx, req.Session, req.Params.GetMeta(), req.Params.GetProgressToken(), level)
}

// For is Of for any request of ss's: meta is its _meta, token its progress
// token (nil: none).
func For(ctx context.Context, ss *mcp.ServerSession, meta map[string]any, token any, level mcp.LoggingLevel) *session.Caller {
	c := &session.Caller{
		Meta:     traceContext(meta),
		LogLevel: level,
		Log: func(_ context.Context, p *mcp.LoggingMessageParams) {
			// ServerSession.Log drops messages below the level the caller set.
			_ = ss.Log(ctx, p)
		},
	}
	if token != nil {
		c.Progress = func(_ context.Context, p *mcp.ProgressNotificationParams) {
			relay := *p
			relay.ProgressToken = token // as it came off the wire (see SDK-NOTES pitfall 7)
			relay.Meta = nil
			_ = ss.NotifyProgress(ctx, &relay)
		}
	}
	init := ss.InitializeParams()
	if init == nil || init.Capabilities == nil {
		return c
	}
	if modern(init, meta) {
		// 2026-07-28 has no server→client requests: its caller is asked
		// with an input_required result (mrtr.go), and only in a request
		// that may answer so. Outside one (a list) the hosted server is
		// still offered what the caller offers, so that it shows the same
		// tools to a list as to a call, but what it asks is refused.
		offerRefused(c, init.Capabilities)
		if p := continuationOf(ctx); p != nil {
			return p.caller(c)
		}
		return c
	}
	caps := init.Capabilities
	if caps.Sampling != nil {
		c.CreateMessage = func(fwd context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			ctx, done := within(ctx, fwd)
			defer done()
			return ss.CreateMessage(ctx, p)
		}
	}
	if caps.Elicitation != nil {
		c.Elicit = func(fwd context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			ctx, done := within(ctx, fwd)
			defer done()
			return ss.Elicit(ctx, p)
		}
	}
	if caps.RootsV2 != nil || caps.Roots.ListChanged {
		c.ListRoots = func(fwd context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
			ctx, done := within(ctx, fwd)
			defer done()
			return ss.ListRoots(ctx, p)
		}
	}
	return c
}

// modern reports whether the request whose _meta is meta, of a session
// initialized with init, speaks 2026-07-28 or later: its _meta says so,
// and otherwise the session's first request did (go-sdk fills a
// sessionless caller's InitializeParams from it).
func modern(init *mcp.InitializeParams, meta map[string]any) bool {
	if v, ok := meta[mcp.MetaKeyProtocolVersion].(string); ok {
		return v >= modernVersion
	}
	return init.ProtocolVersion >= modernVersion
}

// Modern reports whether req is a 2026-07-28 (or later) caller's: its
// hosted server's requests reach it as input requests (Rounds).
func Modern(req mcp.Request) bool {
	if r, ok := req.(interface{ ProtocolVersion() string }); ok {
		return r.ProtocolVersion() >= modernVersion
	}
	return false
}

const modernVersion = "2026-07-28"

// errNotAsking is what a hosted server asking a 2026-07-28 caller outside
// a request that may answer input_required is told.
var errNotAsking = &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
	Message: "colibri: a 2026-07-28 caller can be asked for input only during tools/call, prompts/get and resources/read"}

// offerRefused gives c, a 2026-07-28 caller's, what its capabilities
// offer, each answering errNotAsking.
func offerRefused(c *session.Caller, caps *mcp.ClientCapabilities) {
	if caps.Sampling != nil {
		c.CreateMessage = func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return nil, errNotAsking
		}
	}
	if caps.Elicitation != nil {
		c.Elicit = func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) { return nil, errNotAsking }
	}
	if caps.RootsV2 != nil || caps.Roots.ListChanged {
		c.ListRoots = func(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error) { return nil, errNotAsking }
	}
}

// within is the caller's request context req, also ended when fwd (the
// forwarded request's, which the host ends with its call) ends.
func within(req, fwd context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(req)
	stop := context.AfterFunc(fwd, cancel)
	return ctx, func() { stop(); cancel() }
}

// Levels remembers the logging level each caller's session set; the zero
// value is ready.
type Levels struct {
	mu sync.Mutex
	m  map[*mcp.ServerSession]mcp.LoggingLevel
}

// Set remembers level for ss, a session of server.
func (l *Levels) Set(server *mcp.Server, ss *mcp.ServerSession, level mcp.LoggingLevel) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[*mcp.ServerSession]mcp.LoggingLevel{}
	}
	// Forget sessions that have ended (setLevel is rare: this stays cheap).
	live := map[*mcp.ServerSession]bool{}
	for s := range server.Sessions() {
		live[s] = true
	}
	for s := range l.m {
		if !live[s] {
			delete(l.m, s)
		}
	}
	l.m[ss] = level
}

// Get is the level ss set, or "".
func (l *Levels) Get(ss *mcp.ServerSession) mcp.LoggingLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[ss]
}

// traceKeys are the W3C trace context keys a caller's _meta may carry to
// the hosted request (docs/operations.md#request-ids-and-trace-context).
var traceKeys = []string{"traceparent", "tracestate", "baggage"}

// maxTraceValue bounds each value passed on: W3C's limits are far below it
// (tracestate: 32 members; baggage: 8192 bytes).
const maxTraceValue = 8192

// traceContext is the trace context in a caller's _meta, to pass on to the
// hosted request: string values only, bounded, nothing else of _meta.
func traceContext(meta map[string]any) map[string]any {
	var out map[string]any
	for _, k := range traceKeys {
		v, ok := meta[k].(string)
		if !ok || v == "" || len(v) > maxTraceValue || strings.ContainsAny(v, "\r\n") {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = v
	}
	return out
}
