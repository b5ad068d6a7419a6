package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caller is the client on whose behalf a request runs: what the hosted
// server's notifications and requests are forwarded to. A nil field is a
// capability the caller lacks, and the hosted server is never offered it.
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
}

// router delivers a hosted session's notifications and server-to-client
// requests to the callers whose requests are running on it.
type router struct {
	mu     sync.Mutex
	server string
	calls  map[string]*callRoute // by the progress token colibri gave the hosted call
	active []*Caller             // callers with a call in flight, oldest first
	owner  *Caller               // the caller the session was started for (per request: its only one)

	onToolsChanged func() // told of notifications/tools/list_changed
}

type callRoute struct {
	caller *Caller
	kick   func() // a sign of life: extends the call's timeout
}

func newRouter(server string) *router {
	return &router{server: server, calls: map[string]*callRoute{}}
}

func (r *router) addCall(token string, c *callRoute) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[token] = c
}

func (r *router) removeCall(token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.calls, token)
}

func (r *router) activate(c *Caller) {
	if c == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active = append(r.active, c)
}

func (r *router) deactivate(c *Caller) {
	if c == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.Index(r.active, c); i >= 0 {
		r.active = slices.Delete(r.active, i, i+1)
	}
}

// latest returns the most recent active caller for which has is true, else
// the session's owner if it has: a server may ask its client something
// right after initialize, before any call is in flight.
func (r *router) latest(has func(*Caller) bool) *Caller {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.active) - 1; i >= 0; i-- {
		if has(r.active[i]) {
			return r.active[i]
		}
	}
	if r.owner != nil && has(r.owner) {
		return r.owner
	}
	return nil
}

// recipients are the callers a notification goes to: those with a call in
// flight, and the owner.
func (r *router) recipients() []*Caller {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.active)
	if r.owner != nil && !slices.Contains(out, r.owner) {
		out = append(out, r.owner)
	}
	return out
}

var errNoCaller = errors.New("no caller is waiting on this server to answer the request")

// clientOptions builds the hosted session's client: its capabilities are
// exactly those of caller (none when caller is nil), and its handlers forward
// to the callers active at the time.
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
			c := r.latest(func(c *Caller) bool { return c.CreateMessage != nil })
			if c == nil {
				return nil, errNoCaller
			}
			return c.CreateMessage(ctx, req.Params)
		}
	}
	if caller.Elicit != nil {
		caps.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c := r.latest(func(c *Caller) bool { return c.Elicit != nil })
			if c == nil {
				return nil, errNoCaller
			}
			return c.Elicit(ctx, req.Params)
		}
	}
	if caller.ListRoots != nil {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	return opts
}

// install adds what ClientOptions cannot express: the SDK answers roots/list
// from the client's own list, so colibri intercepts it and asks its caller.
func (r *router) install(c *mcp.Client) {
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "roots/list" {
				return next(ctx, method, req)
			}
			caller := r.latest(func(c *Caller) bool { return c.ListRoots != nil })
			if caller == nil {
				return next(ctx, method, req)
			}
			params, _ := req.GetParams().(*mcp.ListRootsParams)
			return caller.ListRoots(ctx, params)
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
		if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() {
			switch req.Method {
			case "notifications/progress":
				c.routes.progress(ctx, req.Params)
				continue
			case "notifications/message":
				c.routes.log(ctx, req.Params)
				continue
			}
		}
		return msg, nil
	}
}

// progress delivers one progress notification to the call whose token it
// carries; one for no call of colibri's is dropped.
func (r *router) progress(ctx context.Context, raw json.RawMessage) {
	var p mcp.ProgressNotificationParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return
	}
	token, _ := p.ProgressToken.(string)
	r.mu.Lock()
	c := r.calls[token]
	r.mu.Unlock()
	if c == nil {
		return
	}
	c.kick()
	c.caller.Progress(ctx, &p)
}

// log delivers a hosted server's log message to the callers of its session
// (see recipients), with logger "server/NAME". (Each caller's own session drops
// what is below the level that caller set.)
func (r *router) log(ctx context.Context, raw json.RawMessage) {
	var p mcp.LoggingMessageParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return
	}
	p.Logger = "server/" + r.server
	for _, c := range r.recipients() {
		if c.Log != nil {
			c.Log(ctx, &p)
		}
	}
}

// limitReader is the hosted server's stdout as the SDK reads it, bounded:
// the moment one message (one line) passes limit bytes, the process group is
// killed and reading fails. Nothing past the limit is ever buffered.
type limitReader struct {
	p     *proc
	limit int64
	line  int64 // bytes of the current line so far
}

var errTooLarge = errors.New("message larger than COLIBRI_MCP_MAX_RESULT_BYTES")

func (r *limitReader) Read(b []byte) (int, error) {
	n, err := r.p.stdout.Read(b)
	r.p.bytesRead.Add(int64(n))
	if err == io.EOF {
		// The server closed its stdout (usually: it exited), as opposed
		// to colibri closing the pipe after a protocol error.
		r.p.stdoutEOF.Store(true)
	}
	chunk := b[:n]
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			r.line += int64(len(chunk))
			break
		}
		if r.line+int64(i) > r.limit {
			r.line += int64(i)
			break
		}
		r.line = 0
		chunk = chunk[i+1:]
	}
	if r.line > r.limit {
		r.p.tooLarge.Store(true)
		r.p.kill()
		return 0, errTooLarge
	}
	return n, err
}

func (r *limitReader) Close() error {
	r.p.closePipes()
	return nil
}

// pipeWriter is the hosted server's stdin as the SDK writes it.
type pipeWriter struct{ p *proc }

func (w pipeWriter) Write(b []byte) (int, error) {
	n, err := w.p.stdin.Write(b)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		// The server closed its stdin: it exited, or is about to.
		w.p.stdinBroken.Store(true)
	}
	return n, err
}

func (w pipeWriter) Close() error {
	w.p.closePipes()
	return nil
}
