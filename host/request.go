package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/pool"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// ListTools starts srv, lists every page of its tools and tears the process
// down after returning (a persistent server's warm session is used, and
// kept, instead). Spawn, initialize and tools/list are retried on
// transient failures.
func (h *Host) ListTools(ctx context.Context, srv *registry.Server, caller *session.Caller) ([]*mcp.Tool, error) {
	// Listing is always allowed, gate or not: the hosted server is offered
	// none of the caller's capabilities, so it cannot ask the caller
	// anything (an elicitation "re-enter your password", a sampling prompt).
	return h.listOn(ctx, srv, caller.Listing())
}

// listOn is the tool list of srv read on a session offered caller's
// capabilities (ListTools offers none).
func (h *Host) listOn(ctx context.Context, srv *registry.Server, caller *session.Caller) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	err := h.leased(ctx, srv, caller, true, func(_ context.Context, l *lease) error {
		tools = l.tools
		return nil
	})
	return tools, err
}

// leased runs do on a lease of srv's session offered caller (fresh: its
// tool list read from the server, not a cache), as every request but a
// call holds one: entered (Host.Close waits for it), the lease ended with
// do's error, the spares refilled after. A call (CallTool) asks its gate
// and retries between these steps, and has them of its own.
func (h *Host) leased(ctx context.Context, srv *registry.Server, caller *session.Caller, fresh bool, do func(context.Context, *lease) error) error {
	ctx, leave, err := h.enter(ctx, srv.Name)
	if err != nil {
		return err
	}
	defer leave()
	defer h.refillSpares(srv)
	l, err := h.lease(ctx, srv, caller, fresh)
	if err != nil {
		return err
	}
	err = do(ctx, l)
	l.end(err)
	return err
}

// CallTool starts srv, checks that it lists tool name and that args (nil:
// none) fit the tool's inputSchema, calls it, and returns the
// hosted result unchanged (its own isError included). The process is torn
// down after returning, unless the server is persistent: then its warm
// session is used, started if need be, and kept.
//
// A call is retried only when it surely never reached the tool, or when the
// tool declares readOnlyHint or idempotentHint and its process died.
//
// caller is the relay (where the server's notifications and requests go);
// gate is asked whether the call may go ahead (nil: it may), before
// anything starts and before tools/call is sent (Gate).
func (h *Host) CallTool(ctx context.Context, srv *registry.Server, name string, args *session.Arguments, caller *session.Caller, gate Gate) (*mcp.CallToolResult, error) {
	if gate == nil {
		gate = openGate{}
	}
	ctx, leave, err := h.enter(ctx, srv.Name)
	if err != nil {
		return nil, err
	}
	defer leave()
	if err := h.admitHeld(srv, name, caller, gate); err != nil {
		return nil, err // refused before anything starts
	}
	defer h.refillSpares(srv)
	for attempts := 1; ; attempts++ {
		res, tool, err := h.callOnce(ctx, srv, name, args, caller, gate)
		var e *failure.Error
		if err == nil || !errors.As(err, &e) || !retryCall(e, tool) || attempts >= h.opts.Retries ||
			e.Retry.After > srv.CallTimeoutOr(h.opts.Timeout) {
			if e != nil && attempts > 1 {
				e.Attempts = attempts
			}
			return res, err
		}
		h.log.WarnContext(ctx, "retrying tools/call", "server", srv.Name, "tool", name, "attempt", attempts+1, "err", err)
		h.retried(srv.Name, failure.PhaseCall)
		if err := h.sleep(ctx, attempts, e.Retry.After); err != nil {
			e.Attempts = attempts
			return nil, e
		}
	}
}

// lease is one request's use of a session, per-request and warm alike: a
// fresh session opened for the request and torn down after it, or a warm
// one borrowed from the pool and given back. It comes with the session's
// tool list (cached reports that it came from a cache, which may be behind
// the server), relist to ask the server again, and end, which gives the
// session back, told how the request went.
type lease struct {
	s      *session.Session
	tools  []*mcp.Tool
	cached bool
	relist func(ctx context.Context) ([]*mcp.Tool, error)
	end    func(err error)
}

// lease opens or borrows a session of srv for one request, its tools listed
// (fresh: from the server, not a cache). Transient failures of starting and
// listing are retried.
func (h *Host) lease(ctx context.Context, srv *registry.Server, caller *session.Caller, fresh bool) (*lease, error) {
	if srv.IsPersistent() {
		return h.warmLease(ctx, srv, caller, fresh)
	}
	s, tools, cached, err := h.openAndList(ctx, srv, caller, fresh)
	if err != nil {
		return nil, err
	}
	return &lease{s: s, tools: tools, cached: cached,
		relist: func(ctx context.Context) ([]*mcp.Tool, error) {
			tools, size, err := s.ListTools(ctx, caller.Listing())
			if err == nil {
				h.remember(srv, s, tools, size)
			}
			return tools, err
		},
		end: func(err error) {
			switch failure.KindOf(err) {
			case failure.KindCancelled, failure.KindUnknownTool, failure.KindInvalidArguments, failure.KindDenied:
				// A refusal of colibri's own, or a cancellation (the SDK
				// has sent notifications/cancelled; a polite close lets it
				// reach the server before the process is stopped, within
				// the teardown bound).
				s.Close()
			default:
				if err == nil {
					s.Close()
				} else {
					s.Abort()
				}
			}
		},
	}, nil
}

// callOnce is one attempt of CallTool: lease a session, call, give it back.
// It returns the tool it called, for the retry decision.
func (h *Host) callOnce(ctx context.Context, srv *registry.Server, name string, args *session.Arguments, caller *session.Caller, gate Gate) (*mcp.CallToolResult, *mcp.Tool, error) {
	l, err := h.lease(ctx, srv, caller, false)
	if err != nil {
		return nil, nil, err
	}
	res, tool, err := h.callOn(ctx, srv, l, name, args, caller, gate)
	l.end(err)
	return res, tool, err
}

// callOn finds the tool in the lease's list, asks the gate and checks the
// arguments (vet), and calls it. A list from a cache is asked again before
// colibri refuses a call, or passes on the server's own refusal of it.
func (h *Host) callOn(ctx context.Context, srv *registry.Server, l *lease, name string, args *session.Arguments, caller *session.Caller, gate Gate) (*mcp.CallToolResult, *mcp.Tool, error) {
	tools := l.tools
	tool := findTool(tools, name)
	argErr := h.vet(ctx, srv.Name, name, tools, args, gate)
	if argErr != nil && l.cached && failure.KindOf(argErr) != failure.KindDenied && failure.KindOf(argErr) != failure.KindToolChanged {
		// The cache may be behind the server: ask it before refusing.
		var err error
		if tools, err = l.relist(ctx); err != nil {
			return nil, nil, err
		}
		tool = findTool(tools, name)
		argErr = h.vet(ctx, srv.Name, name, tools, args, gate)
	}
	if argErr != nil {
		return nil, tool, argErr
	}
	res, err := l.s.CallTool(ctx, name, args, caller)
	var remote *session.RemoteError
	if errors.As(err, &remote) {
		// The server refused the call itself. If colibri let it through on
		// a cached list, the list may be what is wrong: ask again.
		if l.cached {
			if tools, lerr := l.relist(ctx); lerr == nil && findTool(tools, name) == nil {
				return nil, nil, UnknownTool(srv.Name, name, gate.Nameable(tools))
			}
		}
		return remote.Result(name), tool, nil
	}
	return res, tool, err
}

// vet refuses a call that must not be made: to a tool that the server's
// list, have, lacks, to one the gate refuses on that list
// (Gate.BeforeSend: the policy, the pins), or with arguments the tool's
// inputSchema rejects. The gate judges before the schema, so that a caller
// learns nothing of a tool it may not call: an invalid_arguments message
// would say that the tool exists, and what it takes.
func (h *Host) vet(ctx context.Context, server, name string, have []*mcp.Tool, args *session.Arguments, gate Gate) error {
	tool := findTool(have, name)
	if tool == nil {
		return UnknownTool(server, name, gate.Nameable(have))
	}
	if err := gate.BeforeSend(tool, have); err != nil {
		return err
	}
	return h.schemas.Check(ctx, server, tool, args.Checked())
}

// admitHeld asks the gate about tool name on the list the host holds of
// srv (Gate.BeforeStart), when it holds one that has the tool: a call the
// policy or the pins refuse is refused before anything starts. What passes
// is asked again on the list the call is checked against (vet). A list
// read for a caller offering capabilities is not held for one that offers
// none: a server may list its tools differently to a client that can
// sample or elicit, and the plain caller's pins would be checked on
// another list than its own.
func (h *Host) admitHeld(srv *registry.Server, name string, caller *session.Caller, gate Gate) error {
	held, plain := h.known.getPlain(srv, time.Now())
	if !plain && caller.Capabilities() == "" {
		return nil
	}
	if t := findTool(held, name); t != nil {
		return gate.BeforeStart(t, held)
	}
	return nil
}

// maxToolsNamed bounds the tools an unknown_tool message names: a long
// list says little more, at a cost in a model's context. maxNameShown
// bounds each name in it: a hosted server's names may be of any length.
const (
	maxToolsNamed = 30
	maxNameShown  = suggest.MaxWord
)

// UnknownTool is the unknown_tool failure for a tool that server does not
// list: it names the closest tool and the tools the server has (at most
// maxToolsNamed of them), so that the caller, often a model, can correct
// itself without another request.
func UnknownTool(server, name string, have []*mcp.Tool) *failure.Error {
	names := make([]string, 0, len(have))
	for _, t := range have {
		names = append(names, t.Name)
	}
	hint := "the server lists no tools"
	if len(names) > 0 {
		shown := make([]string, 0, maxToolsNamed)
		for _, n := range names[:min(len(names), maxToolsNamed)] {
			if r := []rune(n); len(r) > maxNameShown {
				n = string(r[:maxNameShown-1]) + "…"
			}
			shown = append(shown, n)
		}
		listed := strings.Join(shown, ", ")
		if len(names) > maxToolsNamed {
			listed += fmt.Sprintf(", and %d more", len(names)-maxToolsNamed)
		}
		hint = "its tools: " + listed
		if near := suggest.Closest(name, names); near != "" {
			hint = fmt.Sprintf("did you mean %q? %s", near, hint)
		}
	}
	return &failure.Error{Kind: failure.KindUnknownTool, Server: server, Tool: name, Phase: failure.PhaseList,
		Err: errors.New("the server does not list this tool"), Hint: hint}
}

// retryCall reports whether a failed tools/call may be tried again: the
// request surely never reached the server, or the tool says repeating it is
// harmless and its process died under it (or, for a remote server, the
// server failed it in a way that may come after the tool ran).
func retryCall(e *failure.Error, tool *mcp.Tool) bool {
	if e.Retry.Unsent {
		return true
	}
	if !(e.Kind == failure.KindCrashed && e.Retry.Transient || e.Retry.Idempotent) || tool == nil || tool.Annotations == nil {
		return false
	}
	a := tool.Annotations
	return a.ReadOnlyHint || a.IdempotentHint
}

func findTool(tools []*mcp.Tool, name string) *mcp.Tool {
	for _, t := range tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// openAndList opens a session and finds its tools: from the list cache
// unless fresh is set (cached reports it), else by tools/list, which
// refreshes the cache. Transient failures are retried.
func (h *Host) openAndList(ctx context.Context, srv *registry.Server, caller *session.Caller, fresh bool) (s *session.Session, tools []*mcp.Tool, cached bool, err error) {
	err = h.withRetries(ctx, srv, func() error {
		var err error
		if s, err = h.open(ctx, srv, caller); err != nil {
			return err
		}
		if !fresh {
			if tools = h.lists.Get(sessionListKey(srv, s)); tools != nil {
				cached = true
				return nil
			}
		}
		var size int64
		if tools, size, err = s.ListTools(ctx, caller.Listing()); err != nil {
			s.Abort()
			return err
		}
		h.remember(srv, s, tools, size)
		return nil
	})
	if err != nil {
		return nil, nil, false, err
	}
	return s, tools, cached, nil
}

// openRetrying opens a session, retrying transient failures.
func (h *Host) openRetrying(ctx context.Context, srv *registry.Server, caller *session.Caller) (s *session.Session, err error) {
	err = h.withRetries(ctx, srv, func() error {
		s, err = h.open(ctx, srv, caller)
		return err
	})
	return s, err
}

// withRetries runs f until it succeeds, fails permanently or has been tried
// Retries times, with exponential back-off between tries. Permanent
// failures and timeouts are never retried; the error says how many tries
// were made.
func (h *Host) withRetries(ctx context.Context, srv *registry.Server, f func() error) error {
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil {
			return nil
		}
		var e *failure.Error
		if !errors.As(err, &e) || !e.Retry.Transient || attempt >= h.opts.Retries || e.Retry.After > srv.Timeout(h.opts.Timeout) {
			if e != nil && attempt > 1 {
				e.Attempts = attempt
			}
			return err
		}
		h.log.WarnContext(ctx, "retrying", "server", srv.Name, "phase", e.Phase, "attempt", attempt+1, "err", err)
		h.retried(srv.Name, e.Phase)
		if err := h.sleep(ctx, attempt, e.Retry.After); err != nil {
			e.Attempts = attempt
			return e
		}
	}
}

// sleep waits the back-off before attempt+1, or what the server asked for
// (Retry-After) when that is given. It fails when ctx ends first.
func (h *Host) sleep(ctx context.Context, attempt int, asked time.Duration) error {
	d := h.backoff(attempt)
	if asked > 0 {
		d = asked
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxRetryBackoff caps one back-off, however many retries are allowed.
const maxRetryBackoff = time.Minute

// backoff is the wait before attempt+1: RetryBackoff, doubled for each
// attempt already made, at most maxRetryBackoff (a plain shift would wrap
// into zero or a negative wait after enough attempts: a hot retry loop).
func (h *Host) backoff(attempt int) time.Duration {
	d := min(h.opts.RetryBackoff, maxRetryBackoff)
	for i := 1; i < attempt && d < maxRetryBackoff; i++ {
		d *= 2
	}
	return min(d, maxRetryBackoff)
}

// Check reports what would stop srv from starting, without starting it: an
// unset ${NAME}, a command that cannot be found or run, a bad cwd, a jail
// setting that cannot work.
func (h *Host) Check(srv *registry.Server) error {
	if err := h.stateProblem(srv); err != nil {
		return err
	}
	if srv.URL != "" {
		r, err := h.dialRemote(srv)
		if err == nil {
			r.Stop(0)
		}
		return err
	}
	_, _, err := h.launch.Command(srv)
	return err
}

// Confinement says in one line how srv's processes are confined, as this
// kernel and srv's command make its sandbox (launch.Builder.Confinement):
// what check and the servers tool show.
func (h *Host) Confinement(srv *registry.Server) string { return h.launch.Confinement(srv) }

// Retain shuts down the warm processes and spares of servers that reg no
// longer has, or whose entry changed (they start again, as edited, on next
// use), revokes the egress credentials of those whose "net" list changed,
// and starts the spares of entries new to the host.
func (h *Host) Retain(reg *registry.Registry) {
	h.pool.Retain(reg)
	h.launch.Retain(reg)
	h.known.retain(reg)
	h.syncSpares(reg)
}

// Warm lists the warm processes of a persistent server.
func (h *Host) Warm(server string) []pool.Process { return h.pool.Status(server) }
