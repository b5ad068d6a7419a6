package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/session"
)

// serve --only's warm tools/call, relayed below go-sdk's sessions on both
// sides (docs/benchmarks.md, "The serve --only hop"). Two go-sdk sessions
// in the hop cost a warm call most of what colibri adds to it: each decodes
// and encodes the call and its result and hands them between goroutines.
// A call of a caller's stdio session that speaks 2025-11-25 or earlier, to
// a persistent server colibri runs as a process, is taken from the face
// before go-sdk's server reads it (OnlyCalls), run through exactly the
// middlewares go-sdk would run it through (control, dispatch: the request
// id, the metrics, the hold of its large strings, the gate, the policy,
// the pins, the schema check, the audit line), sent to the warm process
// below go-sdk's client (session.WithRaw, lineconn.Transport.Call), and its
// result written back to the caller as the server wrote it, under the
// caller's id. Progress, logs, sampling, elicitation and roots still go
// through the go-sdk sessions, which stay up for them; cancellation is the
// face's (its context) and the host's (notifications/cancelled under
// colibri's id). Anything else — another method, a call the fast path
// cannot read as go-sdk would, a 2026-07-28 request — goes to go-sdk as
// before.

// OnlyCalls is the hook serve --only's stdio face offers each call to
// (stdioserve.Transport.Calls), for server, which NewOnlyServer made: nil
// leaves the call to go-sdk, else the returned func answers it. It returns
// nil when server is not serve --only's.
func (s *Service) OnlyCalls(server *mcp.Server) func(*jsonrpc.Request) func(context.Context) *jsonrpc.Response {
	v, ok := s.onlies.Load(server)
	if !ok {
		return nil
	}
	return v.(*only).fastCall
}

// fastCall takes req when the fast path can answer it as go-sdk's session
// would; see above.
func (o *only) fastCall(req *jsonrpc.Request) func(context.Context) *jsonrpc.Response {
	if req.Method != "tools/call" || o.caps.Tools == nil || len(req.Params) == 0 || string(bytes.TrimSpace(req.Params)) == "null" {
		return nil // go-sdk refuses a call without params
	}
	ss := o.soleSession()
	if ss == nil {
		return nil
	}
	if init := ss.InitializeParams(); init == nil || init.ProtocolVersion >= "2026-07-28" {
		return nil // not initialized (go-sdk refuses it), or a stateless caller's
	}
	reg, err := o.s.readRegistry()
	if err != nil {
		return nil
	}
	if srv := reg.Servers[o.name]; srv == nil || !srv.IsPersistent() || srv.URL != "" {
		return nil // per-request processes and remote servers: go-sdk's path
	}
	var p mcp.CallToolParamsRaw
	if err := json.Unmarshal(req.Params, &p); err != nil || !plainCall(&p) {
		return nil // go-sdk answers what it cannot read, and reads 2026-07-28's fields
	}
	id := req.ID
	return func(ctx context.Context) *jsonrpc.Response {
		ctx = o.s.admittedUnder(ctx, reg) // the registry read above: once a request
		ctx, raw := session.WithRaw(ctx)
		res, err := o.fastHandler(ctx, "tools/call", &mcp.CallToolRequest{Session: ss, Params: &p})
		if err != nil {
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) {
				rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
			}
			return &jsonrpc.Response{ID: id, Error: rpcErr}
		}
		r, _ := res.(*mcp.CallToolResult)
		b := raw.Of(r)
		o.s.log.DebugContext(ctx, "tools/call answered on serve --only's fast path", "server", o.name, "tool", p.Name, "relayed", b != nil)
		if b != nil {
			return &jsonrpc.Response{ID: id, Result: b} // as the hosted server wrote it
		}
		b, err = encodeResult(res) // colibri's own answer (a refusal, a failure)
		if err != nil {
			return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "colibri: encoding the result: " + err.Error()}}
		}
		return &jsonrpc.Response{ID: id, Result: b}
	}
}

// encodeResult is v as go-sdk's jsonrpc2 encodes a result: without
// escaping HTML's characters.
func encodeResult(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// fastHandler runs a request through serve --only's middlewares, as go-sdk
// runs the requests it reads (both take them from receiving).
func (o *only) fastHandler(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
	o.fastOnce.Do(func() {
		h := mcp.MethodHandler(func(_ context.Context, method string, _ mcp.Request) (mcp.Result, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "colibri: " + method + " has no fast path"}
		})
		mws := o.receiving()
		for i := len(mws) - 1; i >= 0; i-- {
			h = mws[i](h)
		}
		o.fast = h
	})
	return o.fast(ctx, method, req)
}

// plainCall reports whether p is a call of the protocols before
// 2026-07-28: no retry of a multi-round-trip request, no per-request
// protocol version (go-sdk reads those).
func plainCall(p *mcp.CallToolParamsRaw) bool {
	if p.InputResponses != nil || p.RequestState != "" {
		return false
	}
	for k := range p.Meta {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			return false
		}
	}
	return true
}

// soleSession is the caller's session when there is exactly one (the
// stdio face's), else nil.
func (o *only) soleSession() *mcp.ServerSession {
	var one *mcp.ServerSession
	for ss := range o.server.Sessions() {
		if one != nil {
			return nil
		}
		one = ss
	}
	return one
}
