package host

//lint:file-ignore SA1019 colibri relays sampling, roots and logging between a caller and a hosted server on purpose: both sides still speak the protocol versions that have them (deprecated, not removed, in 2026-07-28).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/upver"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// session is an initialized MCP client session with a hosted server: over
// its process's stdio, or over HTTP to a remote server (the upstream).
type session struct {
	h      *Host
	srv    *registry.Server
	up     upstream
	cs     *mcp.ClientSession
	routes *router
	caps   *mcp.ClientCapabilities // what colibri offered the server
	plain  bool                    // offered no capability: its list is the one list_tools shows
	modern bool                    // speaks 2026-07-28: no session, no ping, no logging/setLevel

	tearingDown atomic.Bool // close or abort has begun: the first one wins

	exitOnce sync.Once
	exitCtx  context.Context // ends when the process has exited (exited)
}

// listKey is the list cache's key for this session's tools.
func (s *session) listKey() [32]byte {
	return listKey(s.srv, s.caps, s.cs.InitializeResult())
}

// open starts srv and initializes it: one attempt, no retry. On failure
// nothing is left running (the group is killed and reaped in the background).
func (h *Host) open(ctx context.Context, srv *registry.Server, caller *Caller) (_ *session, err error) {
	defer func() { h.started(srv.Name, err) }()
	timeout := srv.Timeout(h.opts.Timeout)
	ph := newPhase(ctx, timeout, 0)
	defer ph.stop()
	if ctx.Err() != nil {
		// The caller has given up already: start nothing. (A free process
		// slot is taken whatever the context, and a warm request whose
		// shared start was cancelled comes back here to start it itself.)
		return nil, &Error{Kind: KindCancelled, Server: srv.Name, Phase: PhaseSpawn, Err: errCancelled}
	}

	up, err := h.startUpstream(ctx, ph, srv)
	if err != nil {
		return nil, err
	}
	s := &session{h: h, srv: srv, up: up, routes: newRouter(srv.Name, up.redactor())}
	defer s.endOnExit(ph)()
	transport := up.transport()
	if r, ok := up.(interface {
		relayBelow(func(string, json.RawMessage) bool)
	}); ok {
		// A remote upstream relays in its HTTP client: go-sdk's connection
		// must reach the session unwrapped (its hooks open the GET stream).
		r.relayBelow(s.routes.relay)
	} else {
		transport = &relayTransport{routes: s.routes, inner: transport}
	}
	copts := s.routes.clientOptions(caller)
	s.caps = copts.Capabilities
	s.plain = caller == nil || (caller.CreateMessage == nil && caller.Elicit == nil && caller.ListRoots == nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "colibri-mcp", Version: h.opts.Version}, copts)
	s.routes.install(client, caller)
	if h.opts.OnRequest != nil {
		client.AddSendingMiddleware(h.observe(srv.Name))
	}
	key := srv.ProcessKey()
	version := h.versions.Ask(key)
	if version == upver.Modern {
		client.AddSendingMiddleware(probeBound(h.probeTimeout(timeout)))
	}
	pctx := up.track(ph.ctx)
	cs, err := client.Connect(pctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		e := s.classify(PhaseInitialize, err, ctx, ph, pctx)
		s.abort()
		return nil, e
	}
	s.cs = cs
	init := cs.InitializeResult()
	serverVersion := ""
	if init.ServerInfo != nil {
		serverVersion = init.ServerInfo.Version
	}
	h.versions.Learn(key, serverVersion, init.ProtocolVersion)
	if n, ok := up.(interface{ connected(*mcp.ClientSession) }); ok {
		n.connected(cs)
	}
	s.modern = init.ProtocolVersion >= upver.Modern
	if caller != nil && caller.LogLevel != "" && !s.modern { // 2026-07-28 has no logging/setLevel: the level goes in each request's _meta
		if caps := cs.InitializeResult().Capabilities; caps != nil && caps.Logging != nil {
			if err := cs.SetLoggingLevel(ph.ctx, &mcp.SetLoggingLevelParams{Level: caller.LogLevel}); err != nil {
				up.logger().Debug("logging/setLevel refused", "err", err)
			}
		}
	}
	return s, nil
}

// maxListPages bounds the pages of one tools/list: a server that hands out
// cursors forever must not keep colibri listing (and holding) forever.
const maxListPages = 100

// listTools lists every page of the server's tools within the list timeout.
// The whole list, not only each page, is bounded: at most maxListPages
// pages and MaxResultBytes bytes read from the server while listing, past
// which the process is stopped and the list fails too_large.
// It also returns the bytes read while listing: what the list cache counts
// it to cost.
func (s *session) listTools(ctx context.Context, caller *Caller) ([]*mcp.Tool, int64, error) {
	ph := newPhase(ctx, s.srv.Timeout(s.h.opts.Timeout), 0)
	defer ph.stop()
	defer s.endOnExit(ph)()
	if caller != nil {
		defer s.routes.begin(ph.ctx, caller, "", func() {})()
	}
	defer s.up.unstick(ph.ctx)()
	start := s.up.read()
	tools := []*mcp.Tool{}
	params := &mcp.ListToolsParams{}
	for pages := 1; ; pages++ {
		pctx := s.up.track(ph.ctx)
		res, err := s.cs.ListTools(pctx, params)
		if err != nil {
			return nil, 0, s.classify(PhaseList, err, ctx, ph, pctx)
		}
		tools = append(tools, res.Tools...)
		read := s.up.read() - start
		if read > s.h.opts.MaxResultBytes || (res.NextCursor != "" && pages >= maxListPages) {
			s.up.kill()
			return nil, 0, &Error{Kind: KindTooLarge, Server: s.srv.Name, Phase: PhaseList,
				Err: fmt.Errorf("the tool list passed %d pages or %d bytes (%d pages, %d bytes so far); the server was stopped",
					maxListPages, s.h.opts.MaxResultBytes, pages, read),
				Hint: "raise COLIBRI_MCP_MAX_RESULT_BYTES if the list is expected"}
		}
		if res.NextCursor == "" {
			if s.plain {
				s.h.listed(s.srv, tools)
			}
			return tools, read, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// callTool calls one tool. Progress from the server extends the call's
// timeout, up to ten times call_timeout_ms.
func (s *session) callTool(ctx context.Context, name string, args any, caller *Caller) (*mcp.CallToolResult, error) {
	d := s.srv.CallTimeoutOr(s.h.opts.Timeout)
	ph := newPhase(ctx, d, 10*d)
	defer ph.stop()
	defer s.endOnExit(ph)()

	params := &mcp.CallToolParams{Name: name, Arguments: sent(args)}
	if raw, ok := params.Arguments.(json.RawMessage); ok && !s.up.lowers() {
		// The caller's large strings may be references (internal/bulk):
		// only colibri's own connection to a process puts them back.
		joined, err := s.h.opts.Bulk.Joined(raw)
		if err != nil {
			// A string that is no longer there: the call must not be sent
			// with a reference in its place (nor the table's marker).
			return nil, &Error{Kind: KindInternal, Server: s.srv.Name, Tool: name, Phase: PhaseCall,
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
		token = "colibri-" + strconv.FormatUint(s.h.seq.Add(1), 10)
		params.SetProgressToken(token)
	}
	if caller == nil {
		caller = &Caller{}
	}
	// Deferred first, run last: the call's notifications are delivered
	// before its result is returned.
	defer s.routes.begin(ph.ctx, caller, token, ph.kick)()
	defer s.up.unstick(ph.ctx)()
	pctx := s.up.track(ph.ctx)
	res, err := s.cs.CallTool(pctx, params)
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && ctx.Err() == nil && !ph.expired() && !s.up.oversize() && s.up.toolError(pctx) {
		return nil, &remoteError{err: rpcErr, redact: s.up.redactor()}
	}
	if err != nil {
		e := s.classify(PhaseCall, err, ctx, ph, pctx)
		e.Tool = name
		return nil, e
	}
	return res, nil
}

// remoteError is a JSON-RPC error the hosted server answered tools/call
// with: the hosted tool failing, not colibri. CallTool passes it back as the
// tool's own isError result.
type remoteError struct {
	err    *jsonrpc.Error
	redact *redactor
}

func (e *remoteError) Error() string { return e.redact.apply(e.err.Error()) }

// result is the error as the hosted tool's own isError result, in colibri's
// words (so with the server's secrets redacted).
func (e *remoteError) result(tool string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: e.redact.apply(fmt.Sprintf("%s: error %d: %s", tool, e.err.Code, e.err.Message))}},
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
func (s *session) endOnExit(ph *phaseTimer) (stop func()) {
	unregister := context.AfterFunc(s.exited(), func() {
		if s.up.endedWithError() {
			ph.cancel(errExited)
		}
	})
	return func() { unregister() }
}

// exited is a context that ends when the upstream has ended.
func (s *session) exited() context.Context {
	s.exitOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		s.exitCtx = ctx
		go func() {
			<-s.up.done()
			cancel()
		}()
	})
	return s.exitCtx
}

// classify turns an SDK error of phase into one of the contract's kinds.
// callerCtx is the request's own context (its end means cancellation); ph is
// the phase's, whose own end means a timeout; pctx is the context the
// phase's requests ran under (from upstream.track).
func (s *session) classify(phase Phase, err error, callerCtx context.Context, ph *phaseTimer, pctx context.Context) *Error {
	e := &Error{Server: s.srv.Name, Phase: phase}
	defer func() { e.StderrTail = s.up.tail() }()
	switch {
	case s.up.oversize():
		e.Kind = KindTooLarge
		e.Err = fmt.Errorf("the server sent a message larger than %d bytes; it was stopped", s.h.opts.MaxResultBytes)
		e.Hint = "raise COLIBRI_MCP_MAX_RESULT_BYTES if the result is expected"
	case context.Cause(ph.ctx) == errExited && phase == PhaseInitialize:
		// A refusal to start: permanent.
		e.Kind = KindHandshake
		e.Err = fmt.Errorf("the server %s during initialize", s.up.describeEnd())
	case context.Cause(ph.ctx) == errExited:
		e.Kind = KindCrashed
		e.Err = fmt.Errorf("the server %s during %s", s.up.describeEnd(), phaseMethod(phase))
		e.transient = true
	case ph.expired():
		e.Kind = KindTimeout
		cause := context.Cause(ph.ctx)
		if cause == errCeiling {
			e.Err = cause
		} else {
			e.Err = fmt.Errorf("no answer to %s within %s", phaseMethod(phase), ph.d)
		}
		e.Hint = timeoutHint(phase)
	case callerCtx.Err() != nil:
		e.Kind = KindCancelled
		e.Err = errCancelled
	default:
		s.up.diagnose(pctx, e, phase, err)
	}
	return e
}

// exitWait bounds how long classify waits for a server that closed its
// stdio to exit, so that its status and last words can be reported.
const exitWait = time.Second

func phaseMethod(p Phase) string {
	switch p {
	case PhaseInitialize:
		return "initialize"
	case PhaseList:
		return "tools/list"
	case PhaseCall:
		return "tools/call"
	}
	return string(p)
}

func timeoutHint(p Phase) string {
	if p == PhaseCall {
		return "raise call_timeout_ms for this server if the tool is slow"
	}
	return "raise timeout_ms for this server, or COLIBRI_MCP_TIMEOUT"
}

// close tears the session down politely after the answer went out: the
// process gets EOF on stdin and TerminateGrace to leave, then its group is
// killed. It runs in the background; Host.Close waits for it.
func (s *session) close() {
	if !s.tearingDown.CompareAndSwap(false, true) {
		return
	}
	s.h.background(func() {
		// Closing the client session closes our ends of the pipes: the
		// server's stdin reaches EOF ("the client SHOULD initiate shutdown
		// by first closing the input stream").
		s.closeClient(s.h.opts.TerminateGrace)
		s.up.stop(s.h.opts.TerminateGrace)
		s.release()
		s.up.logger().Debug("stopped", "status", s.up.describeEnd())
	})
}

// closeClient closes the client session, which waits for what the SDK has
// in flight; if that takes longer than d, the process is killed, which ends
// the connection and, with it, the wait. Teardown never hangs on a server.
func (s *session) closeClient(d time.Duration) {
	if s.cs == nil {
		s.up.closeConn()
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
	s.up.kill()
	s.up.closeConn()
	// The connection is gone; only a handler of the caller's that ignores
	// its context could still hold Close. Teardown does not wait for it.
	t.Reset(reapWait)
	select {
	case <-done:
	case <-t.C:
		s.up.logger().Warn("the client session did not close; going on without it", "waited", d+reapWait)
	}
}

// abort ends a broken or failed session at once: the group is killed now,
// and reaped in the background.
func (s *session) abort() {
	s.up.kill()
	if !s.tearingDown.CompareAndSwap(false, true) {
		return
	}
	s.h.background(func() {
		s.closeClient(0)
		s.up.stop(0)
		s.release()
	})
}

// release gives back what the upstream held once it is stopped: its
// process slot, and the orphans a process may have left.
func (s *session) release() {
	if s.up.usesSlot() {
		s.h.releaseSlot()
		s.h.reapAdopted()
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

// probeTimeout is the probe's bound: ProbeTimeout, at most a third of the
// initialize phase, so that a legacy server still has the rest to answer
// initialize.
func (h *Host) probeTimeout(phase time.Duration) time.Duration {
	return min(h.opts.ProbeTimeout, phase/3)
}

// ping asks whether the server still answers. 2026-07-28 has no ping: a
// server speaking it may answer with an error (method not found, or a
// request without its _meta), which is an answer all the same.
func (s *session) ping(ctx context.Context) error {
	err := s.cs.Ping(ctx, nil)
	var rpcErr *jsonrpc.Error
	if s.modern && errors.As(err, &rpcErr) {
		return nil
	}
	return err
}
