// Package session is one MCP client session with a hosted or remote
// server over an Upstream: the phases of a request, each with its timeout
// (initialize, tools/list, tools/call), the classification of what went
// wrong into the contract's kinds, the relay of the server's notifications
// and requests to the Caller on whose behalf it runs, and teardown. It
// starts no process and reads no registry: host hands it an Upstream and a
// Config.
//
//	timer := session.NewTimer(ctx, cfg.Timeout, 0)
//	up := … // started within timer.Context()
//	s, err := session.Open(ctx, timer, cfg, up, caller)
//	timer.Stop()
//	tools, _, err := s.ListTools(ctx, caller.Listing())
//	res, err := s.CallTool(ctx, "echo", args, caller)
//	s.Close() // in the background: Config.Background
package session

//lint:file-ignore SA1019 colibri relays sampling, roots and logging between a caller and a hosted server on purpose: both sides still speak the protocol versions that have them (deprecated, not removed, in 2026-07-28).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/redact"
	"github.com/colibri-mcp/colibri-mcp/internal/upver"
)

// Config is what a session needs to know of its server and of colibri.
type Config struct {
	// Server is the registry entry's name.
	Server string
	// Timeout is each phase's timeout (the entry's timeout_ms);
	// CallTimeout is tools/call's (call_timeout_ms).
	Timeout, CallTimeout time.Duration
	// MaxResultBytes bounds one message, and one whole tool list.
	MaxResultBytes int64
	// TerminateGrace is how long the server may take to leave after its
	// input closes, and again after SIGTERM.
	TerminateGrace time.Duration
	// Version is colibri's, sent as clientInfo.
	Version string
	// ProtocolVersion is the version asked of the server; when it is
	// 2026-07-28, its server/discover probe is bounded by ProbeTimeout.
	ProtocolVersion string
	ProbeTimeout    time.Duration
	// Bulk is the caller's face's table of large strings (internal/bulk).
	Bulk *bulk.Table
	// OnRequest, when set, is told of each request sent to the server.
	OnRequest func(method string, took time.Duration, errorType string)
	// Listed, when set, is told of each whole tool list read on a session
	// offered no capability (the list list_tools shows).
	Listed func(tools []*mcp.Tool)
	// Background runs teardown after the caller has its answer (host's
	// Close waits for it); Release is called once the upstream has
	// stopped (its process slot, its orphans).
	Background func(func())
	Release    func()
	// Notified, when set, is told of every notification the server sends
	// (list_changed of each kind, resources/updated, log messages,
	// progress) before colibri routes it; it runs on the goroutine that
	// reads the server, and must be quick.
	Notified func(method string, params json.RawMessage)
}

// Session is an initialized MCP client session with a hosted server: over
// its process's stdio, or over HTTP to a remote server (the Upstream).
type Session struct {
	cfg    Config
	up     Upstream
	cs     *mcp.ClientSession
	direct Direct // the transport's requests below go-sdk, if it has them
	// perRequest is the _meta go-sdk puts in each request of a 2026-07-28
	// session (SEP-2575: the version, clientInfo, clientCapabilities), as
	// its first request carried it: callDirect sends the same.
	perRequest atomic.Pointer[map[string]any]
	routes     *router
	caps       *mcp.ClientCapabilities // what colibri offered the server
	plain      bool                    // offered no capability: its list is the one list_tools shows
	modern     bool                    // speaks 2026-07-28: no session, no ping, no logging/setLevel

	tearingDown atomic.Bool // close or abort has begun: the first one wins
	// tokens numbers the progress tokens colibri gives this session's
	// calls: the router finds a call by its token, per session.
	tokens atomic.Uint64

	exitOnce sync.Once
	exitCtx  context.Context // ends when the process has exited (exited)
}

// Open connects a client session to up and initializes it, within timer
// (the spawn and initialize phase, which started before up did): one
// attempt, no retry. On failure up is killed, and reaped in the background.
func Open(ctx context.Context, timer *Timer, cfg Config, up Upstream, caller *Caller) (*Session, error) {
	s := &Session{cfg: cfg, up: up, routes: newRouter(cfg.Server, up.Secrets(), up.Logger())}
	s.routes.notified = cfg.Notified
	defer s.endOnExit(timer)()
	r, below := up.(RelayBelow)
	if below {
		// A remote upstream relays in its HTTP client (go-sdk's connection
		// must reach the session unwrapped: its hooks open the GET stream),
		// a process in lineconn (before go-sdk decodes each message). It
		// is handed the relay before it makes its transport.
		r.RelayBelow(s.routes.relay)
	}
	transport := up.Transport()
	s.direct, _ = transport.(Direct)
	if !below {
		transport = &relayTransport{routes: s.routes, inner: transport}
	}
	copts := s.routes.clientOptions(caller)
	s.caps = copts.Capabilities
	s.plain = caller == nil || (caller.CreateMessage == nil && caller.Elicit == nil && caller.ListRoots == nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "colibri-mcp", Version: cfg.Version}, copts)
	s.routes.install(client, caller)
	if cfg.OnRequest != nil {
		client.AddSendingMiddleware(observe(cfg.OnRequest))
	}
	client.AddSendingMiddleware(s.learnPerRequest)
	if cfg.ProtocolVersion == upver.Modern {
		client.AddSendingMiddleware(probeBound(min(cfg.ProbeTimeout, cfg.Timeout/3)))
	}
	pctx := up.Track(timer.ctx)
	cs, err := client.Connect(pctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: cfg.ProtocolVersion})
	if err != nil {
		e := s.classify(failure.PhaseInitialize, err, ctx, timer, pctx)
		s.Abort()
		return nil, e
	}
	s.cs = cs
	init := cs.InitializeResult()
	if c, ok := up.(Connector); ok {
		c.Connected(cs)
	}
	s.modern = init.ProtocolVersion >= upver.Modern
	if caller != nil && caller.LogLevel != "" && !s.modern { // 2026-07-28 has no logging/setLevel: the level goes in each request's _meta
		if caps := init.Capabilities; caps != nil && caps.Logging != nil {
			if err := cs.SetLoggingLevel(timer.ctx, &mcp.SetLoggingLevelParams{Level: caller.LogLevel}); err != nil {
				up.Logger().Debug("logging/setLevel refused", "err", err)
			}
		}
	}
	return s, nil
}

// InitializeResult is what the server answered initialize with.
func (s *Session) InitializeResult() *mcp.InitializeResult { return s.cs.InitializeResult() }

// Capabilities are what colibri offered the server.
func (s *Session) Capabilities() *mcp.ClientCapabilities { return s.caps }

// Plain reports whether the session was offered no capability of a
// caller's: its tool list is the one list_tools shows.
func (s *Session) Plain() bool { return s.plain }

// Upstream is what the session talks to.
func (s *Session) Upstream() Upstream { return s.up }

// OnToolsChanged sets f to be told of each notifications/tools/list_changed
// the server sends.
func (s *Session) OnToolsChanged(f func()) {
	s.routes.mu.Lock()
	s.routes.onToolsChanged = f
	s.routes.mu.Unlock()
}

// maxListPages bounds the pages of one tools/list: a server that hands out
// cursors forever must not keep colibri listing (and holding) forever.
const maxListPages = 100

// ListTools lists every page of the server's tools within the list timeout.
// The whole list, not only each page, is bounded: at most maxListPages
// pages and MaxResultBytes bytes read from the server while listing, past
// which the process is stopped and the list fails too_large.
// It also returns the bytes read while listing: what the list cache counts
// it to cost.
func (s *Session) ListTools(ctx context.Context, caller *Caller) ([]*mcp.Tool, int64, error) {
	ph := NewTimer(ctx, s.cfg.Timeout, 0)
	defer ph.Stop()
	defer s.endOnExit(ph)()
	if caller != nil {
		defer s.routes.begin(ph.ctx, caller, "", func() {})()
	}
	defer s.up.Unstick(ph.ctx)()
	start := s.up.BytesRead()
	tools := []*mcp.Tool{}
	params := &mcp.ListToolsParams{}
	for pages := 1; ; pages++ {
		pctx := s.up.Track(ph.ctx)
		res, err := s.cs.ListTools(pctx, params)
		if err != nil {
			return nil, 0, s.classify(failure.PhaseList, err, ctx, ph, pctx)
		}
		tools = append(tools, res.Tools...)
		read := s.up.BytesRead() - start
		if read > s.cfg.MaxResultBytes || (res.NextCursor != "" && pages >= maxListPages) {
			s.up.Kill()
			return nil, 0, &failure.Error{Kind: failure.KindTooLarge, Server: s.cfg.Server, Phase: failure.PhaseList,
				Err: fmt.Errorf("the tool list passed %d pages or %d bytes (%d pages, %d bytes so far); the server was stopped",
					maxListPages, s.cfg.MaxResultBytes, pages, read),
				Hint: "raise COLIBRI_MCP_MAX_RESULT_BYTES if the list is expected"}
		}
		if res.NextCursor == "" {
			if s.plain && s.cfg.Listed != nil {
				s.cfg.Listed(tools)
			}
			return tools, read, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// CallTool calls one tool. Progress from the server extends the call's
// timeout, up to ten times call_timeout_ms.
func (s *Session) CallTool(ctx context.Context, name string, args *Arguments, caller *Caller) (*mcp.CallToolResult, error) {
	d := s.cfg.CallTimeout
	ph := NewTimer(ctx, d, 10*d)
	defer ph.Stop()
	defer s.endOnExit(ph)()

	params := &mcp.CallToolParams{Name: name, Arguments: args.sent()}
	if raw, ok := params.Arguments.(json.RawMessage); ok && !s.up.Lowers() {
		// The caller's large strings may be references (internal/bulk):
		// only colibri's own connection to a process puts them back.
		joined, err := s.cfg.Bulk.Joined(raw)
		if err != nil {
			// A string that is no longer there: the call must not be sent
			// with a reference in its place (nor the table's marker).
			return nil, &failure.Error{Kind: failure.KindInternal, Server: s.cfg.Server, Tool: name, Phase: failure.PhaseCall,
				Err: errors.New("part of the arguments was lost before they were sent")}
		}
		params.Arguments = json.RawMessage(joined)
	}
	if caller != nil && len(caller.Meta) > 0 {
		params.Meta = maps.Clone(caller.Meta) // the progress token is added to a copy
	}
	if s.modern && caller != nil && caller.LogLevel != "" {
		if params.Meta == nil {
			params.Meta = map[string]any{}
		}
		params.Meta[mcp.MetaKeyLogLevel] = caller.LogLevel
	}
	token := ""
	if caller != nil && caller.Progress != nil {
		token = "colibri-" + strconv.FormatUint(s.tokens.Add(1), 10)
		params.SetProgressToken(token)
	}
	if caller == nil {
		caller = &Caller{}
	}
	// Deferred first, run last: the call's notifications are delivered
	// before its result is returned.
	defer s.routes.begin(ph.ctx, caller, token, ph.kick)()
	defer s.up.Unstick(ph.ctx)()
	pctx := s.up.Track(ph.ctx)
	var res *mcp.CallToolResult
	var err error
	if raw := rawFrom(ctx); raw != nil && s.directly() {
		start := time.Now()
		res, err = s.callDirect(pctx, raw, params)
		if s.cfg.OnRequest != nil { // as the client's sending middleware (observe) times the others
			s.cfg.OnRequest("tools/call", time.Since(start), RequestErrorType(res, err))
		}
	} else {
		res, err = s.cs.CallTool(pctx, params)
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && ctx.Err() == nil && !ph.Expired() && !s.up.Oversize() && s.up.ToolError(pctx) {
		return nil, &RemoteError{err: rpcErr, redact: s.up.Secrets()}
	}
	if err != nil {
		e := s.classify(failure.PhaseCall, err, ctx, ph, pctx)
		e.Tool = name
		return nil, e
	}
	return res, nil
}

// RemoteError is a JSON-RPC error the hosted server answered tools/call
// with: the hosted tool failing, not colibri. host passes it back as the
// tool's own isError result.
type RemoteError struct {
	err    *jsonrpc.Error
	redact *redact.Set
}

func (e *RemoteError) Error() string { return e.redact.Apply(e.err.Error()) }

// Result is the error as the hosted tool's own isError result, in colibri's
// words (so with the server's secrets redacted).
func (e *RemoteError) Result(tool string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: e.redact.Apply(fmt.Sprintf("%s: error %d: %s", tool, e.err.Code, e.err.Message))}},
	}
}

// endOnExit ends phase ph as soon as the server exits with an error
// status: a child that inherited its stdout (a wrapper's helper) may keep
// the pipe open, and the phase would otherwise wait out its timeout and be
// reported as one. Call the returned func when the phase returns.
//
// One goroutine per session waits for the exit (exited); each phase only
// registers a callback, so that a warm call starts no goroutine of its own
// for this (issue 16: goroutine hand-offs are most of a warm hop).
func (s *Session) endOnExit(ph *Timer) (stop func()) {
	unregister := context.AfterFunc(s.exited(), func() {
		if s.up.EndedWithError() {
			ph.cancel(errExited)
		}
	})
	return func() { unregister() }
}

// exited is a context that ends when the upstream has ended.
func (s *Session) exited() context.Context {
	s.exitOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		s.exitCtx = ctx
		go func() {
			<-s.up.Done()
			cancel()
		}()
	})
	return s.exitCtx
}

// classify turns an SDK error of phase into one of the contract's kinds.
// callerCtx is the request's own context (its end means cancellation); ph is
// the phase's, whose own end means a timeout; pctx is the context the
// phase's requests ran under (from upstream.track).
func (s *Session) classify(phase failure.Phase, err error, callerCtx context.Context, ph *Timer, pctx context.Context) *failure.Error {
	e := &failure.Error{Server: s.cfg.Server, Phase: phase}
	defer func() { e.StderrTail = s.up.Tail() }()
	switch {
	case s.up.Oversize():
		e.Kind = failure.KindTooLarge
		e.Err = fmt.Errorf("the server sent a message larger than %d bytes; it was stopped", s.cfg.MaxResultBytes)
		e.Hint = "raise COLIBRI_MCP_MAX_RESULT_BYTES if the result is expected"
	case context.Cause(ph.ctx) == errExited && phase == failure.PhaseInitialize:
		// A refusal to start: permanent.
		e.Kind = failure.KindHandshake
		e.Err = fmt.Errorf("the server %s during initialize", s.up.DescribeEnd())
	case context.Cause(ph.ctx) == errExited:
		e.Kind = failure.KindCrashed
		e.Err = fmt.Errorf("the server %s during %s", s.up.DescribeEnd(), phase.Method())
		e.Retry.Transient = true
		if s.up.NeverRead(pctx) {
			e.Err = fmt.Errorf("the server %s before it read %s", s.up.DescribeEnd(), phase.Method())
			e.Retry.Unsent = true
		}
	case ph.Expired():
		e.Kind = failure.KindTimeout
		cause := context.Cause(ph.ctx)
		if cause == errCeiling {
			e.Err = cause
		} else {
			e.Err = fmt.Errorf("no answer to %s within %s", phase.Method(), ph.d)
		}
		e.Hint = timeoutHint(phase)
	case callerCtx.Err() != nil:
		e.Kind = failure.KindCancelled
		e.Err = ErrCancelled
	default:
		s.up.Diagnose(pctx, e, phase, err)
	}
	return e
}

// closeWait bounds how long teardown waits for a client session to close
// once its upstream was killed.
const closeWait = 2 * time.Second

func timeoutHint(p failure.Phase) string {
	if p == failure.PhaseCall {
		return "raise call_timeout_ms for this server if the tool is slow"
	}
	return "raise timeout_ms for this server, or COLIBRI_MCP_TIMEOUT"
}

// Closing reports whether the session's close or abort has begun (its
// process retired, idle, failed or ended): it takes no new use.
func (s *Session) Closing() bool { return s.tearingDown.Load() }

// Close tears the session down politely after the answer went out: the
// process gets EOF on stdin and TerminateGrace to leave, then its group is
// killed. It runs in the background; Host.Close waits for it.
func (s *Session) Close() {
	if !s.tearingDown.CompareAndSwap(false, true) {
		return
	}
	s.cfg.Background(func() {
		// Closing the client session closes our ends of the pipes: the
		// server's stdin reaches EOF ("the client SHOULD initiate shutdown
		// by first closing the input stream").
		s.closeClient(s.cfg.TerminateGrace)
		s.up.Stop(s.cfg.TerminateGrace)
		s.release()
		s.up.Logger().Debug("stopped", "status", s.up.DescribeEnd())
	})
}

// closeClient closes the client session, which waits for what the SDK has
// in flight; if that takes longer than d, the process is killed, which ends
// the connection and, with it, the wait. Teardown never hangs on a server.
func (s *Session) closeClient(d time.Duration) {
	if s.cs == nil {
		s.up.CloseConn()
		return
	}
	done := make(chan struct{})
	go func() {
		s.cs.Close()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	s.up.Kill()
	s.up.CloseConn()
	// The connection is gone; only a handler of the caller's that ignores
	// its context could still hold Close. Teardown does not wait for it.
	t.Reset(closeWait)
	select {
	case <-done:
	case <-t.C:
		s.up.Logger().Warn("the client session did not close; going on without it", "waited", d+closeWait)
	}
}

// Abort ends a broken or failed session at once: the group is killed now,
// and reaped in the background.
func (s *Session) Abort() {
	s.up.Kill()
	if !s.tearingDown.CompareAndSwap(false, true) {
		return
	}
	s.cfg.Background(func() {
		s.closeClient(0)
		s.up.Stop(0)
		s.release()
	})
}

// release gives back what the upstream held once it is stopped: its
// process slot, and the orphans a process may have left.
func (s *Session) release() {
	if s.cfg.Release != nil {
		s.cfg.Release()
	}
}

// probeBound bounds server/discover, the probe of a server that may speak
// 2026-07-28: one that ignores requests it does not know (many written
// before it) would otherwise hold the whole initialize phase. go-sdk then
// falls back to initialize on the same connection, and the version book
// remembers the answer (internal/upver): the wait is paid once per entry.
func probeBound(d time.Duration) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "server/discover" {
				return next(ctx, method, req)
			}
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			return next(ctx, method, req)
		}
	}
}

// Ping asks whether the server still answers. 2026-07-28 has no ping: a
// server speaking it may answer with an error (method not found, or a
// request without its _meta), which is an answer all the same.
func (s *Session) Ping(ctx context.Context) error {
	err := s.cs.Ping(ctx, nil)
	var rpcErr *jsonrpc.Error
	if s.modern && errors.As(err, &rpcErr) {
		return nil
	}
	return err
}

// ReadResource reads one resource within the call timeout. The server's
// own JSON-RPC error (resource not found…) is returned as it is.
func (s *Session) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	d := s.cfg.CallTimeout
	ph := NewTimer(ctx, d, d)
	defer ph.Stop()
	defer s.endOnExit(ph)()
	defer s.up.Unstick(ph.ctx)()
	pctx := s.up.Track(ph.ctx)
	res, err := s.cs.ReadResource(pctx, &mcp.ReadResourceParams{URI: uri})
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && ctx.Err() == nil && !ph.Expired() && !s.up.Oversize() {
		return nil, rpcErr
	}
	if err != nil {
		return nil, s.classify(failure.PhaseCall, err, ctx, ph, pctx)
	}
	return res, nil
}

// observe is the client middleware that times each request sent to a
// hosted server, for Config.OnRequest. Notifications are not requests.
func observe(onRequest func(method string, took time.Duration, errorType string)) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			start := time.Now()
			res, err := next(ctx, method, req)
			onRequest(method, time.Since(start), RequestErrorType(res, err))
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
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrPhaseTimeout) || errors.Is(err, errCeiling):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "transport"
}
