package tools

//lint:file-ignore SA1019 serve --only relays logging between a caller and a hosted server on purpose: both sides still speak the protocol versions that have it (deprecated, not removed, in 2026-07-28).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/policy"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools/caller"
)

// serve --only NAME (docs/protocol.md, "One server, fully"): one hosted
// server offered as colibri's own MCP server, under its own names, with its
// instructions and capabilities, every request of it passed through
// colibri's host (confinement, environment, timeouts, process slots) and
// its controls (the call gate on tools/call, the policy's tools, prompts
// and resources rules, pins, schema checks, audit, metrics).
//
// go-sdk's server keeps the session with the caller (initialize, ping,
// logging/setLevel, the subscriptions it books); a receiving middleware
// answers every request of a feature by asking the hosted server, so that
// a per_request server is started for each one and a list is always the
// server's own, screened for this caller.

// onlyPages bounds the pages of one hosted list colibri reads whole (its
// prompts, resources or templates): a server handing out cursors forever
// must not keep colibri listing.
const onlyPages = 100

// only is the state of serve --only.
type only struct {
	s      *Service
	name   string
	caps   *mcp.ServerCapabilities // what colibri offers, as the server declared it
	server *mcp.Server
	// notes carries the hosted server's notifications to the caller,
	// off the goroutine that reads the server, bounded.
	notes chan func()

	mu sync.Mutex
	// who is the principal of each caller's session (what partition its
	// hosted sessions are: callerOf), learnt from its requests.
	who map[*mcp.ServerSession]string
	// subs holds, for each partition's warm process and URI, the caller
	// sessions subscribed: the hosted subscription is made by the first
	// and ended by the last, or when the last of them ends (watchEnd).
	subs map[subKey]*subscription
	// watched are the sessions holding a subscription, each followed by
	// a goroutine of watchEnd's until it ends.
	watched map[*mcp.ServerSession]bool
	// followed are the hosted sessions subscriptions were made on, each
	// followed by a goroutine of follow's until it ends (then what it held
	// is made again: remakeAll), or serve ends (done).
	followed map[*session.Session]bool
	done     <-chan struct{}

	fastOnce sync.Once
	fast     mcp.MethodHandler // receiving's middlewares around nothing (only_fast.go)
}

type subKey struct{ part, uri string }

// subscription is one hosted subscription and the caller sessions that
// hold it.
type subscription struct {
	sessions map[*mcp.ServerSession]bool
	// hosted is the warm session the subscription was made on, for
	// caller (the first subscriber): its end is sent there, and only
	// while it runs; a process started since holds no subscription, so
	// the next subscribe is passed on again. nil until the subscribe
	// is answered.
	hosted *session.Session
	caller *session.Caller
	// pending: the subscribe is on its way to the server; the sessions
	// that subscribe meanwhile wait for nothing more (one subscription per
	// caller and URI), and an end booked meanwhile is sent once it is
	// answered (made).
	pending bool
	// remade is when the subscription was last made again after its
	// process ended (remakeAll), at most maxRemakes within remakeWindow.
	remade []time.Time
}

// live reports whether the hosted subscription is in place: made, on a
// session still running.
func (sub *subscription) live() bool {
	return sub.hosted != nil && !sub.hosted.Closing() && !session.Ended(sub.hosted.Upstream(), 0)
}

// maxSubscriptions bounds the URIs one partition (a principal) keeps
// subscribed on its hosted server: past it, resources/subscribe is refused.
const maxSubscriptions = 1024

// onlyNotes bounds the notifications waiting for a caller slow to read:
// past it they are dropped (a list_changed comes again with the next
// change; a log line is lost).
const onlyNotes = 256

// NewOnlyServer returns the MCP server of serve --only name: the hosted
// server is started (or its warm session opened) once, to learn what it
// declares; everything else is asked of it request by request. version is
// colibri's, logged; the caller is told the hosted server's own
// serverInfo.
func (s *Service) NewOnlyServer(ctx context.Context, name, version string) (*mcp.Server, error) {
	reg, err := s.registry(ctx)
	if err != nil {
		return nil, err
	}
	srv, err := lookup(reg, name)
	if err != nil {
		return nil, err
	}
	var init *mcp.InitializeResult
	err = s.opts.Host.Request(ctx, srv, nil, func(_ context.Context, sess *session.Session) error {
		init = sess.InitializeResult()
		return nil
	})
	if err != nil {
		return nil, err
	}
	o := &only{s: s, name: name, caps: offered(init.Capabilities), notes: make(chan func(), onlyNotes),
		who: map[*mcp.ServerSession]string{}, subs: map[subKey]*subscription{}, watched: map[*mcp.ServerSession]bool{},
		followed: map[*session.Session]bool{}, done: ctx.Done()}
	instructions, err := o.pinnedInstructions(ctx, srv, init.Instructions)
	if err != nil {
		return nil, err
	}
	impl := &mcp.Implementation{Name: name, Version: version}
	if si := init.ServerInfo; si != nil {
		impl = &mcp.Implementation{Name: si.Name, Title: si.Title, Version: si.Version, WebsiteURL: si.WebsiteURL}
	}
	opts := &mcp.ServerOptions{
		Logger:       s.log,
		Instructions: instructions,
		Capabilities: o.caps,
	}
	if r := o.caps.Resources; r != nil && r.Subscribe {
		opts.SubscribeHandler = o.subscribe
		opts.UnsubscribeHandler = o.unsubscribe
	}
	if o.caps.Completions != nil {
		opts.CompletionHandler = o.complete
	}
	o.server = mcp.NewServer(impl, opts)
	o.server.AddReceivingMiddleware(o.receiving()...) // and fastHandler, for the fast path's calls
	s.onlies.Store(o.server, o)
	s.opts.Host.WatchNotifications(o.notified)
	s.opts.Host.HoldWarm(o.holds)
	go o.deliver(ctx)
	s.log.Info("serving one hosted server as colibri's own", "server", name, "colibri_version", version,
		"hosted", impl.Name, "hosted_version", impl.Version, "protocol", init.ProtocolVersion)
	return o.server, nil
}

// offered is what colibri declares of the hosted server's capabilities: its
// tools, prompts, resources, completions and logging as it declares them;
// never tasks (go-sdk relays none) nor anything experimental or unknown to
// colibri, which it could not relay.
func offered(c *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	out := &mcp.ServerCapabilities{}
	if c == nil {
		return out
	}
	if c.Tools != nil {
		out.Tools = &mcp.ToolCapabilities{ListChanged: c.Tools.ListChanged}
	}
	if c.Prompts != nil {
		out.Prompts = &mcp.PromptCapabilities{ListChanged: c.Prompts.ListChanged}
	}
	if c.Resources != nil {
		out.Resources = &mcp.ResourceCapabilities{ListChanged: c.Resources.ListChanged, Subscribe: c.Resources.Subscribe}
	}
	if c.Completions != nil {
		out.Completions = &mcp.CompletionCapabilities{}
	}
	if c.Logging != nil {
		out.Logging = &mcp.LoggingCapabilities{}
	}
	return out
}

// entry is the registry a request runs under and the entry served: one
// removed or made invalid since colibri started fails every request
// (config), naming it.
func (o *only) entry(ctx context.Context) (*registry.Registry, *registry.Server, error) {
	reg, err := o.s.admit(ctx)
	if err != nil {
		return nil, nil, err
	}
	srv := reg.Servers[o.name]
	if srv == nil {
		return nil, nil, &failure.Error{Kind: failure.KindConfig, Server: o.name,
			Err:  fmt.Errorf("%s no longer has the server %q that serve --only offers", orDefault(reg.Path, "the registry"), o.name),
			Hint: "put the entry back, or run colibri-mcp serve --only with a server the registry has"}
	}
	return reg, srv, nil
}

// callerOf describes the caller of req to the host. Every request of a
// caller offers the hosted server that caller's capabilities, lists
// included, so that a persistent server's requests all reach the one warm
// process kept for them (the host keeps one per capability set): a
// subscription made by one request is the process's that another's call
// toggles. Its log is relayed apart (notified), under the hosted server's
// own logger names.
func (o *only) callerOf(ctx context.Context, ss *mcp.ServerSession, p mcp.Params) *session.Caller {
	var meta map[string]any
	var token any
	if p != nil && !reflect.ValueOf(p).IsNil() { // a request may come without params: a nil pointer in p
		meta = p.GetMeta()
		if t, ok := p.(interface{ GetProgressToken() any }); ok {
			token = t.GetProgressToken()
		}
	}
	c := caller.For(ctx, ss, meta, token, o.s.levels.Get(ss))
	c.Log = nil
	c.Partition = reqctx.Principal(ctx)
	return c
}

// receiving is serve --only's receiving middlewares, outermost first
// (go-sdk's AddReceivingMiddleware order): go-sdk's server runs what it
// reads through them, and fastHandler the calls the fast path takes.
func (o *only) receiving() []mcp.Middleware {
	return []mcp.Middleware{o.control, o.s.sealCursors, o.dispatch}
}

// control is serve --only's outermost middleware: a request id for every
// request, metrics for every request, and for tools/call the hold of its
// large strings (joinBulk) until its audit line is written.
func (o *only) control(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx = withAdmission(reqctx.WithID(ctx, reqctx.NewID()))
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			o.learn(ss, reqctx.Principal(ctx))
		}
		start := time.Now()
		ctx, leave, handle := o.s.joinBulk(ctx, method, req, next)
		defer leave()
		res, err := handle(ctx, method, req)
		o.s.opts.Metrics.ServerOperation(method, time.Since(start), serverErrorType(res, err))
		return res, err
	}
}

// dispatch answers the requests of the hosted server's features by asking
// it; what go-sdk answers itself (initialize, ping, logging/setLevel,
// subscriptions' bookkeeping) goes on.
func (o *only) dispatch(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if asks(method) && caller.Modern(req) {
			// A 2026-07-28 caller is asked for what the hosted server asks
			// in its own protocol's way, a round at a time.
			ss, _ := req.GetSession().(*mcp.ServerSession)
			res, err := o.s.rounds.Run(ctx, caller.Call{Principal: reqctx.Principal(ctx), Server: o.name, Method: method,
				Params: req.GetParams(), Timeout: o.s.callTimeout(o.name), Caller: o.callerOf(ctx, ss, req.GetParams())},
				func(ctx context.Context) (mcp.Result, error) { return o.answer(ctx, method, req, next) })
			var rpcErr *jsonrpc.Error
			switch {
			case err == nil || errors.As(err, &rpcErr):
				return res, err
			case method == "tools/call": // colibri's own failure (too many pending): an isError result
				return o.s.errorResult(err), nil
			}
			return nil, o.failed(ctx, err)
		}
		return o.answer(ctx, method, req, next)
	}
}

// asks reports whether the hosted server may ask a 2026-07-28 caller for
// its input while answering method (MRTR's requests).
func asks(method string) bool {
	return method == "tools/call" || method == "prompts/get" || method == "resources/read"
}

// answer is dispatch's answer to one request.
func (o *only) answer(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	switch r := req.(type) {
	case *mcp.ListToolsRequest:
		if o.caps.Tools != nil {
			return o.listTools(ctx, r)
		}
	case *mcp.CallToolRequest:
		if o.caps.Tools != nil {
			return o.callTool(ctx, r), nil
		}
	case *mcp.ListPromptsRequest:
		if o.caps.Prompts != nil {
			return o.listPrompts(ctx, r)
		}
	case *mcp.GetPromptRequest:
		if o.caps.Prompts != nil {
			return o.getPrompt(ctx, r)
		}
	case *mcp.ListResourcesRequest:
		if o.caps.Resources != nil {
			return o.listResources(ctx, r)
		}
	case *mcp.ListResourceTemplatesRequest:
		if o.caps.Resources != nil {
			return o.listTemplates(ctx, r)
		}
	case *mcp.ReadResourceRequest:
		if o.caps.Resources != nil {
			return o.readResource(ctx, r)
		}
	}
	res, err := next(ctx, method, req)
	if r, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams]); ok && err == nil {
		o.setLevel(ctx, r)
	}
	return res, err
}

// ask runs one request of the hosted server, do, on a session of srv for
// c. The server's own error answer (a prompt it does not have) is returned
// as it is, and leaves the session as a success does.
func ask[R any](o *only, ctx context.Context, srv *registry.Server, c *session.Caller, method string, do func(context.Context, *mcp.ClientSession) (R, error)) (R, error) {
	res, _, err := askOn(o, ctx, srv, c, method, do)
	return res, err
}

// askOn is ask, saying which hosted session answered (a subscription is
// that session's).
func askOn[R any](o *only, ctx context.Context, srv *registry.Server, c *session.Caller, method string, do func(context.Context, *mcp.ClientSession) (R, error)) (R, *session.Session, error) {
	var res R
	var on *session.Session
	var answered *jsonrpc.Error
	err := o.s.opts.Host.Request(ctx, srv, c, func(ctx context.Context, sess *session.Session) error {
		var err error
		on = sess
		res, err = session.Request(ctx, sess, c, method, do)
		if errors.As(err, &answered) {
			return nil
		}
		return err
	})
	if err != nil {
		return res, nil, o.failed(ctx, err)
	}
	if answered != nil {
		return res, nil, answered
	}
	return res, on, nil
}

// JSON-RPC errors of colibri's own for what is not a tool call (a tool
// call's failure is its isError result): codeRefused (−32010) when the
// gate, the policy or the pins refuse, codeFailed (−32011) when colibri
// could not get the answer. data.colibri_error carries the kind, as a
// tool call's structuredContent does.
func (o *only) failed(ctx context.Context, err error) error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return rpcErr
	}
	d := o.s.detail(err)
	code := int64(codeFailed)
	switch d.Kind {
	case failure.KindCallDisabled, failure.KindDenied, failure.KindToolChanged:
		code = codeRefused
	}
	data, _ := json.Marshal(map[string]any{"colibri_error": d})
	o.s.log.DebugContext(ctx, "serve --only refused or failed a request", "server", o.name, "kind", d.Kind, "err", err)
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf("colibri: %s: %s", d.Kind, d.Message), Data: data}
}

// deniedBy is the failure of a request the policy refuses: its message
// names what was refused, never the rule (the log says which).
func (o *only) deniedBy(ctx context.Context, what string, d policy.Decision) error {
	o.s.log.DebugContext(ctx, "policy denied a request", "server", o.name, "what", what, "principal", reqctx.Principal(ctx), "rule", d.Rule)
	return &failure.Error{Kind: failure.KindDenied, Server: o.name,
		Err: fmt.Errorf("policy denies %s on %s for this caller", what, o.name)}
}
