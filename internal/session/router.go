package session

//lint:file-ignore SA1019 colibri relays sampling, roots and logging between a caller and a hosted server on purpose: both sides still speak the protocol versions that have them (deprecated, not removed, in 2026-07-28).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/redact"
)

// Caller is the client on whose behalf a request runs: what the hosted
// server's notifications and requests are forwarded to, shaped like
// go-sdk's ClientOptions (the relay). A nil field is a capability the
// caller lacks, and the hosted server is never offered it. What the
// caller may call is not the relay's to say: host asks its Gate.
type Caller struct {
	// Progress receives the hosted server's progress for the call, with the
	// hosted token (the caller puts its own in). When nil, no progress is
	// asked of the hosted server.
	Progress func(context.Context, *mcp.ProgressNotificationParams)
	// Log receives the hosted server's log messages, Logger set to "server/NAME".
	Log func(context.Context, *mcp.LoggingMessageParams)
	// CreateMessage answers the hosted server's sampling requests.
	CreateMessage func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	// Elicit answers the hosted server's elicitation requests.
	Elicit func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// ListRoots answers the hosted server's roots requests.
	ListRoots func(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error)
	// LogLevel is the level the caller set with logging/setLevel ("" when
	// it set none): colibri sets it on the hosted server too, since many
	// servers send no log message until a level is set.
	LogLevel mcp.LoggingLevel
	// Meta is put into the hosted request's _meta (W3C trace context:
	// traceparent, tracestate, baggage), beside colibri's progress token.
	Meta map[string]any
	// Partition, when set, keeps the caller's warm sessions apart from
	// every other partition's: serve --only gives each principal hosted
	// sessions of its own, so that nothing of one caller's (its log
	// level, roots, subscriptions, the server's logs) reaches another.
	Partition string
}

// Listing is what a caller is offered while a server's tools are listed:
// its log, never its capabilities.
func (c *Caller) Listing() *Caller {
	if c == nil {
		return nil
	}
	return &Caller{Log: c.Log, LogLevel: c.LogLevel, Partition: c.Partition}
}

// Capabilities names what c offers a hosted server, sorted and joined by
// commas ("elicitation,roots,sampling"; "" for none): a warm process cannot
// offer a capability to one caller and hide it from another.
func (c *Caller) Capabilities() string {
	var caps []string
	if c != nil {
		if c.CreateMessage != nil {
			caps = append(caps, "sampling")
		}
		if c.Elicit != nil {
			caps = append(caps, "elicitation")
		}
		if c.ListRoots != nil {
			caps = append(caps, "roots")
		}
	}
	slices.Sort(caps)
	return strings.Join(caps, ",")
}

// router delivers a hosted session's notifications and server-to-client
// requests to the operation (a call, or a list) they belong to, and to no
// one else: progress by the token colibri gave the call; log messages and
// requests to the one operation in flight. When several are in flight on a
// shared warm session, nothing tells them apart: logs are dropped and
// requests refused, rather than sent to the wrong caller.
type router struct {
	mu      sync.Mutex
	server  string
	logger  *slog.Logger      // the upstream's: what the damping dropped is said here
	secrets *redact.Set       // the session's: applied to what is relayed as the server's log
	byToken map[string]*route // by the progress token colibri gave the hosted call
	active  []*route          // operations in flight, oldest first

	onToolsChanged func()                                      // told of notifications/tools/list_changed
	notified       func(method string, params json.RawMessage) // Config.Notified; set before the session opens
}

// route is one operation in flight on a hosted session.
type route struct {
	caller *Caller
	ctx    context.Context // the operation's own: ends when it does
	kick   func()          // a sign of life: extends the call's timeout

	forwarding chan struct{} // bounds the server-to-client requests in flight

	// Notifications reach the caller through a queue of their own, so that
	// a caller slow to read never stalls the relay for the others; the
	// queue is drained before the operation returns its result.
	queue   chan func()
	drained chan struct{}
	closed  atomic.Bool // past its drain bound: what is left is dropped
	// delivering: the goroutine that drains queue was started, at the
	// first notification (under the router's lock): most calls have none,
	// and start no goroutine for them.
	delivering bool

	damping // what a flood of progress and logs leaves of itself (damp.go)
}

// Bounds of a route.
const (
	maxForwarded = 4               // server-to-client requests in flight per call
	routeQueue   = 256             // notifications waiting for a slow caller
	drainWait    = 2 * time.Second // how long a result waits for its notifications
)

// newRouter is the router of server's session; log (nil: none) is told
// of what the damping drops.
func newRouter(server string, secrets *redact.Set, log *slog.Logger) *router {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &router{server: server, logger: log, secrets: secrets, byToken: map[string]*route{}}
}

// redact hides the session's secrets in a log message's data (any JSON).
func (r *router) redact(data any) any {
	if r.secrets.Empty() {
		return data
	}
	b, err := json.Marshal(data)
	if err != nil {
		return data
	}
	clean := r.secrets.Apply(string(b))
	if clean == string(b) {
		return data
	}
	var out any
	if json.Unmarshal([]byte(clean), &out) != nil {
		return redact.Redacted // a secret that was also JSON syntax: say nothing of it
	}
	return out
}

// redactRaw hides the session's secrets in a notification's params, as
// they are sent; ok is false when hiding one broke the JSON (a secret that
// was also JSON syntax): such a notification is not passed on.
func (r *router) redactRaw(params json.RawMessage) (json.RawMessage, bool) {
	if r.secrets.Empty() || len(params) == 0 {
		return params, true
	}
	clean := r.secrets.Apply(string(params))
	if clean == string(params) {
		return params, true
	}
	return json.RawMessage(clean), json.Valid([]byte(clean))
}

// begin opens a route for an operation of caller under ctx, with the
// progress token colibri gave it ("" for none). end closes it: it waits
// (bounded) until every notification queued for it was delivered.
func (r *router) begin(ctx context.Context, caller *Caller, token string, kick func()) (end func()) {
	rt := &route{caller: caller, ctx: ctx, kick: kick,
		forwarding: make(chan struct{}, maxForwarded),
		queue:      make(chan func(), routeQueue), drained: make(chan struct{})}
	r.mu.Lock()
	r.active = append(r.active, rt)
	if token != "" {
		r.byToken[token] = rt
	}
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		if i := slices.Index(r.active, rt); i >= 0 {
			r.active = slices.Delete(r.active, i, i+1)
		}
		if token != "" {
			delete(r.byToken, token)
		}
		r.settle(rt) // the last progress held back, and the count of logs dropped
		// Under the lock: the relay queues only under it, so it never
		// sends on a closed queue.
		close(rt.queue)
		delivering := rt.delivering
		r.mu.Unlock()
		if !delivering {
			return // nothing was queued
		}
		t := time.NewTimer(drainWait)
		defer t.Stop()
		select {
		case <-rt.drained:
		case <-t.C:
			rt.closed.Store(true)
		}
	}
}

// deliver queues f for rt's caller; a caller whose queue is full loses it
// (deliver reports whether it was queued). It is called with r.mu held,
// while rt is still routed.
func (rt *route) deliver(f func()) bool {
	if !rt.delivering {
		rt.delivering = true
		go func() {
			defer close(rt.drained)
			for f := range rt.queue {
				if !rt.closed.Load() {
					f()
				}
			}
		}()
	}
	select {
	case rt.queue <- f:
		return true
	default:
		return false
	}
}

var (
	errNoCall    = errors.New("no call that may answer this request is in flight on this server")
	errAmbiguous = errors.New("several calls are in flight on this server; colibri cannot tell which one this request belongs to")
	errTooMany   = fmt.Errorf("more than %d requests of this server are already waiting for the caller", maxForwarded)
)

// forward passes a server-to-client request to the one operation in flight
// whose caller can answer it (has reports whether it can). The request ends
// when the operation does, whether or not the caller answered, and at most
// maxForwarded wait at once for each operation.
func forward[R any](r *router, ctx context.Context, has func(*Caller) bool, ask func(context.Context, *Caller) (R, error)) (R, error) {
	var zero R
	// Only when exactly one operation is in flight is it surely the one
	// asking; a listing in flight beside a call (which offers nothing) makes
	// it ambiguous too, or a list's request would reach the call's caller.
	r.mu.Lock()
	n := len(r.active)
	var rt *route
	if n == 1 {
		rt = r.active[0]
	}
	r.mu.Unlock()
	switch {
	case n > 1:
		return zero, rpcError(errAmbiguous)
	case rt == nil || !has(rt.caller):
		return zero, rpcError(errNoCall)
	}
	select {
	case rt.forwarding <- struct{}{}:
		defer func() { <-rt.forwarding }()
	default:
		return zero, rpcError(errTooMany)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(rt.ctx, cancel)
	defer stop()
	res, err := ask(ctx, rt.caller)
	return res, rpcError(err)
}

// rpcError is err as the hosted server is answered: a JSON-RPC error with
// the caller's own code, or else -32603 (a plain Go error would go out with
// code 0, which no JSON-RPC peer expects; docs/protocol.md).
func rpcError(err error) error {
	var e *jsonrpc.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e) && e.Code != 0:
		return e
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: failure.ClipMessage(err.Error())}
}

// clientOptions builds the hosted session's client: its capabilities are
// exactly those of caller (none when caller is nil), and its handlers
// forward to the operation in flight.
func (r *router) clientOptions(caller *Caller) *mcp.ClientOptions {
	caps := &mcp.ClientCapabilities{} // no roots unless the caller has them
	opts := &mcp.ClientOptions{
		Capabilities: caps,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			r.mu.Lock()
			f := r.onToolsChanged
			r.mu.Unlock()
			if f != nil {
				f()
			}
		},
	}
	if caller == nil {
		return opts
	}
	if caller.CreateMessage != nil {
		caps.Sampling = &mcp.SamplingCapabilities{}
		opts.CreateMessageHandler = func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return forward(r, ctx, func(c *Caller) bool { return c.CreateMessage != nil },
				func(ctx context.Context, c *Caller) (*mcp.CreateMessageResult, error) {
					return c.CreateMessage(ctx, req.Params)
				})
		}
	}
	if caller.Elicit != nil {
		caps.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return forward(r, ctx, func(c *Caller) bool { return c.Elicit != nil },
				func(ctx context.Context, c *Caller) (*mcp.ElicitResult, error) { return c.Elicit(ctx, req.Params) })
		}
	}
	if caller.ListRoots != nil {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	return opts
}

// install adds what ClientOptions cannot express: the SDK answers roots/list
// from the client's own list, so colibri intercepts it and asks its caller.
func (r *router) install(c *mcp.Client, caller *Caller) {
	if caller == nil || caller.ListRoots == nil {
		return // roots were not offered: the SDK's own (empty) answer stands
	}
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "roots/list" {
				return next(ctx, method, req)
			}
			params, _ := req.GetParams().(*mcp.ListRootsParams)
			return forward(r, ctx, func(c *Caller) bool { return c.ListRoots != nil },
				func(ctx context.Context, c *Caller) (*mcp.ListRootsResult, error) { return c.ListRoots(ctx, params) })
		}
	})
}

// relayTransport hands the hosted server's progress and log notifications to
// the router in the order they are read, before the SDK sees any later
// message. The SDK itself queues notifications for a handler goroutine but
// completes a call as soon as its response is read, so a response could
// overtake what the server sent before it; relayed here, every notification
// reaches the caller before the result it preceded.
type relayTransport struct {
	inner  mcp.Transport
	routes *router
}

func (t *relayTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &relayConn{Connection: c, routes: t.routes}, nil
}

type relayConn struct {
	mcp.Connection
	routes *router
}

func (c *relayConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && c.routes.relay(req.Method, req.Params) {
			continue
		}
		return msg, nil
	}
}

// relay takes the hosted server's progress and log notifications, and
// reports whether it took the one named.
func (r *router) relay(method string, params json.RawMessage) bool {
	if r.notified != nil {
		if clean, ok := r.redactRaw(params); ok {
			r.notified(method, clean)
		}
	}
	switch method {
	case "notifications/progress":
		r.progress(params)
	case "notifications/message":
		r.log(params)
	default:
		return false
	}
	return true
}

// progress delivers one progress notification to the call whose token it
// carries, as the call's pace allows (damp.go); one for no call of
// colibri's is dropped. Only the token is read of one held back.
func (r *router) progress(raw json.RawMessage) {
	token, ok := progressToken(raw)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.byToken[token]
	if rt == nil || rt.caller.Progress == nil {
		return
	}
	rt.kick()
	if rt.holdProgress(r, raw) {
		return
	}
	r.deliverProgress(rt, raw)
}

// deliverProgress queues raw, a progress notification's params, for rt's
// caller. It is called with r.mu held.
func (r *router) deliverProgress(rt *route, raw json.RawMessage) {
	var p mcp.ProgressNotificationParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return
	}
	rt.deliver(func() { rt.caller.Progress(rt.ctx, &p) })
}

// log delivers a hosted server's log message, with logger "server/NAME", to
// the caller of the one operation in flight, as its pace allows (damp.go:
// the others are counted, and the count told once the operation ends).
// (That caller's own session drops what is below the level it set.)
func (r *router) log(raw json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.active) != 1 {
		return // none, or several: nothing tells whose it is
	}
	rt := r.active[0]
	if rt.caller.Log == nil {
		return
	}
	if !rt.logs.allow(r.clock(), logEvery, logBurst) {
		rt.droppedLogs++
		return
	}
	var p mcp.LoggingMessageParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return
	}
	p.Logger = "server/" + r.server
	p.Data = r.redact(p.Data)
	if !rt.deliver(func() { rt.caller.Log(rt.ctx, &p) }) {
		rt.droppedLogs++
	}
}
