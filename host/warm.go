package host

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/listchange"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Defaults of the persistent lifecycle.
const (
	DefaultPingInterval     = 30 * time.Second
	DefaultCircuitThreshold = 3
	DefaultCooldown         = time.Second
	DefaultCooldownMax      = time.Minute
)

// pool holds the warm sessions of "persistent" servers: one per server and
// set of capabilities offered (a warm process cannot offer a capability to
// one caller and hide it from another).
type pool struct {
	h       *Host
	mu      sync.Mutex
	servers map[warmKey]*warm
	closed  bool
}

type warmKey struct {
	server string
	caps   string // the capabilities offered, e.g. "elicitation,roots,sampling"
}

// warm is one warm server: its session when up, and what it has learnt of
// failures.
type warm struct {
	key warmKey
	srv *registry.Server
	fp  [sha256.Size]byte // the registry entry it was started from
	h   *Host

	mu        sync.Mutex
	s         *session
	starting  *startAttempt // the start under way, which waiters share
	started   time.Time
	inflight  int
	tools     []*mcp.Tool     // the session's list, nil until listed or after list_changed
	toolsGen  int             // bumped by list_changed
	changes   listchange.Gate // which list_changed act
	failures  int             // consecutive process-level failures
	lastErr   error
	openUntil time.Time // the circuit is open (calls fail fast) until then
	cooldown  time.Duration
	idle      *time.Timer
	retired   bool // shut down: registry edit, removal or colibri exiting
}

// startAttempt is one start of a warm server; every request that waited
// for it gets its outcome (its error, rather than a start of its own).
type startAttempt struct {
	done chan struct{}
	err  error
}

// sharedErr is err for one more waiter: a copy, since each request may
// set its own Attempts.
func sharedErr(err error) error {
	var e *failure.Error
	if errors.As(err, &e) {
		cp := *e
		return &cp
	}
	return err
}

// WarmProcess describes a warm process of a persistent server.
type WarmProcess struct {
	PID          int           `json:"pid"`
	Uptime       time.Duration `json:"-"`
	UptimeMS     int64         `json:"uptime_ms"`
	Capabilities []string      `json:"capabilities"`
}

func fingerprint(srv *registry.Server) [sha256.Size]byte {
	return sha256.Sum256([]byte(srv.ProcessKey()))
}

func capsKey(caller *Caller) string {
	var caps []string
	if caller != nil {
		if caller.CreateMessage != nil {
			caps = append(caps, "sampling")
		}
		if caller.Elicit != nil {
			caps = append(caps, "elicitation")
		}
		if caller.ListRoots != nil {
			caps = append(caps, "roots")
		}
	}
	slices.Sort(caps)
	return strings.Join(caps, ",")
}

// acquire returns srv's warm session for caller, starting it if need be. The
// caller must release it.
func (p *pool) acquire(ctx context.Context, srv *registry.Server, caller *Caller) (*warm, *session, error) {
	key := warmKey{srv.Name, capsKey(caller)}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, &failure.Error{Kind: failure.KindUnavailable, Server: srv.Name, Err: errors.New("colibri is shutting down")}
	}
	w := p.servers[key]
	var fp [sha256.Size]byte
	if w == nil || w.srv != srv { // the same parsed entry needs no fingerprint
		fp = fingerprint(srv)
	} else {
		fp = w.fp
	}
	if w != nil && w.fp != fp {
		// The registry entry changed: its warm process goes, and the new
		// entry starts on this use.
		delete(p.servers, key)
		w.retire()
		w = nil
	}
	if w == nil {
		w = &warm{key: key, srv: srv, fp: fp, h: p.h}
		if p.servers == nil {
			p.servers = map[warmKey]*warm{}
		}
		p.servers[key] = w
	}
	p.mu.Unlock()
	s, err := w.get(ctx, caller)
	return w, s, err
}

// retain shuts down the warm processes of servers the registry no longer
// has, or has changed.
func (p *pool) retain(reg *registry.Registry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, w := range p.servers {
		srv, ok := reg.Servers[key.server]
		if !ok || !srv.IsPersistent() || (srv != w.srv && fingerprint(srv) != w.fp) {
			delete(p.servers, key)
			w.retire()
		}
	}
}

// closeAll shuts every warm process down; no new one starts.
func (p *pool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for key, w := range p.servers {
		delete(p.servers, key)
		w.retire()
	}
}

// status lists the warm processes of server.
func (p *pool) status(server string) []WarmProcess {
	p.mu.Lock()
	ws := make([]*warm, 0, len(p.servers))
	for key, w := range p.servers {
		if key.server == server {
			ws = append(ws, w)
		}
	}
	p.mu.Unlock()
	var out []WarmProcess
	for _, w := range ws {
		w.mu.Lock()
		if w.s != nil && !w.s.up.ended(0) {
			up := time.Since(w.started)
			caps := []string{}
			if w.key.caps != "" {
				caps = strings.Split(w.key.caps, ",")
			}
			out = append(out, WarmProcess{PID: w.s.up.procID(), Uptime: up, UptimeMS: up.Milliseconds(), Capabilities: caps})
		}
		w.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b WarmProcess) int {
		return strings.Compare(strings.Join(a.Capabilities, ","), strings.Join(b.Capabilities, ","))
	})
	return out
}

// get returns the warm session, starting one (once, for all waiting
// callers) when there is none. While the circuit is open it fails fast.
func (w *warm) get(ctx context.Context, caller *Caller) (*session, error) {
	for {
		w.mu.Lock()
		switch {
		case w.retired:
			w.mu.Unlock()
			return nil, &failure.Error{Kind: failure.KindUnavailable, Server: w.srv.Name, Err: errors.New("the server was shut down (registry edited or colibri exiting)")}
		case w.s != nil && !w.s.up.ended(0):
			s := w.s
			w.inflight++
			if w.idle != nil {
				w.idle.Stop()
			}
			w.mu.Unlock()
			return s, nil
		case w.s != nil:
			// It died and watch has not noticed yet: end it here, so that
			// replacing it never leaks its process slot.
			dead := w.s
			w.s = nil
			w.mu.Unlock()
			dead.abort()
			continue
		case time.Now().Before(w.openUntil):
			err := &failure.Error{Kind: failure.KindUnavailable, Server: w.srv.Name,
				Err: fmt.Errorf("the server failed %d times in a row; colibri waits %s before starting it again (last error: %v)",
					w.failures, time.Until(w.openUntil).Round(time.Millisecond), w.lastErr),
				Hint: "see stderr_tail and colibri's log; fix the server, or edit its registry entry to retry now"}
			var last *failure.Error
			if errors.As(w.lastErr, &last) {
				err.StderrTail = last.StderrTail
			}
			w.mu.Unlock()
			return nil, err
		case w.starting != nil:
			att := w.starting
			w.mu.Unlock()
			select {
			case <-att.done:
			case <-ctx.Done():
				return nil, &failure.Error{Kind: failure.KindCancelled, Server: w.srv.Name, Phase: failure.PhaseSpawn, Err: errCancelled}
			}
			if att.err != nil && failure.KindOf(att.err) != failure.KindCancelled {
				return nil, sharedErr(att.err) // the start it waited for failed
			}
			// Started, or the request that was starting it gave up (its
			// caller cancelled): that is no failure of the server's, and
			// this request starts it again rather than share the cancel.
			continue
		}
		att := &startAttempt{done: make(chan struct{})}
		w.starting = att
		w.mu.Unlock()

		s, err := w.h.openRetrying(ctx, w.srv, caller)

		w.mu.Lock()
		w.starting = nil
		att.err = err
		close(att.done)
		if err != nil {
			w.failed(err)
			w.mu.Unlock()
			return nil, err
		}
		if w.retired {
			w.mu.Unlock()
			s.close()
			continue
		}
		w.s, w.started, w.tools = s, time.Now(), nil
		w.mu.Unlock()
		s.routes.mu.Lock()
		s.routes.onToolsChanged = func() {
			// Absorbed at the cost of a lock: one during colibri's own
			// list, or after one already marked the list stale, says
			// nothing new (internal/listchange).
			act, over := w.changes.Notify()
			if over {
				s.up.logger().Warn("the server keeps sending notifications/tools/list_changed; ignoring them until colibri lists its tools again", "bound", listchange.MaxPerList)
			}
			if !act {
				return
			}
			w.mu.Lock()
			w.tools = nil
			w.toolsGen++
			w.mu.Unlock()
			w.h.known.forget(w.srv.Name)
			// Whichever warm process said so: a list that changes in
			// one process often changes for all (the server's own state).
			w.h.listed(w.srv, nil)
		}
		s.routes.mu.Unlock()
		go w.watch(s)
		// The request that started it is named (request_id, from ctx); the
		// process's later lines carry no request's id: it serves many.
		s.up.logger().InfoContext(ctx, "warm server started", "capabilities", w.key.caps)
	}
}

// failed counts a process-level failure (with w.mu held) and opens the
// circuit after too many in a row. Permanent failures (configuration, a
// missing command, jail settings) are not the process's doing and do not
// count: they fail at once anyway.
func (w *warm) failed(err error) {
	var e *failure.Error
	if errors.As(err, &e) {
		switch e.Kind {
		case failure.KindConfig, failure.KindJail, failure.KindCancelled, failure.KindOverloaded, failure.KindUnknownTool, failure.KindInvalidArguments, failure.KindDenied:
			return
		case failure.KindSpawn:
			if !e.Retry.Transient {
				return
			}
		}
	}
	w.failures++
	w.lastErr = err
	o := w.h.opts
	if w.failures >= o.CircuitThreshold {
		switch {
		case w.cooldown == 0:
			w.cooldown = o.Cooldown
		default:
			w.cooldown = min(2*w.cooldown, o.CooldownMax)
		}
		w.openUntil = time.Now().Add(w.cooldown)
		w.h.log.Warn("warm server keeps failing; cooling down", "server", w.srv.Name,
			"failures", w.failures, "cooldown", w.cooldown, "err", err)
	}
}

// release ends one request's use of s. A process-level failure ends the
// process (its whole group): the next request starts a fresh one. A timeout
// is not one: it cancelled its own call (the server was sent
// notifications/cancelled), and the calls that share the process go on;
// the idle ping finds a server that is wedged for everyone.
func (w *warm) release(s *session, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inflight--
	var e *failure.Error
	switch {
	case err == nil || !errors.As(err, &e):
		if w.s == s {
			w.failures, w.cooldown = 0, 0
		}
	case e.Kind == failure.KindCrashed || e.Kind == failure.KindTooLarge || s.up.ended(0):
		if w.s == s {
			w.s = nil
			w.failed(err)
			s.abort()
		}
	}
	if w.inflight == 0 && w.s == s && w.s != nil {
		if w.retired {
			w.s = nil
			s.close()
			return
		}
		w.armIdle(s)
	}
}

// armIdle closes s after the idle timeout, unless it is used again first
// (with w.mu held).
func (w *warm) armIdle(s *session) {
	if w.idle != nil {
		w.idle.Stop()
	}
	w.idle = time.AfterFunc(w.srv.IdleTimeout(), func() {
		w.mu.Lock()
		if w.s != s || w.inflight > 0 {
			w.mu.Unlock()
			return
		}
		w.s = nil
		w.mu.Unlock()
		s.up.logger().Info("warm server idle; closing it", "idle_timeout", w.srv.IdleTimeout())
		s.close()
	})
}

// watch follows a warm session until it ends: it pings the server while
// idle, to find one that is wedged, and notices a process that exits
// between requests.
func (w *warm) watch(s *session) {
	// keepalive_ms: 0 turns pings off (a nil channel never fires).
	var tick <-chan time.Time
	if d := w.srv.PingInterval(w.h.opts.PingInterval); d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-s.up.done():
			w.mu.Lock()
			if w.s == s {
				w.s = nil
				w.failed(&failure.Error{Kind: failure.KindCrashed, Server: w.srv.Name,
					Err: fmt.Errorf("the warm server %s between requests", s.up.describeEnd()), StderrTail: s.up.tail()})
			}
			w.mu.Unlock()
			s.abort() // whoever replaced it may have already: abort runs once
			return
		case <-tick:
			w.mu.Lock()
			current, idle := w.s == s, w.inflight == 0
			w.mu.Unlock()
			if !current {
				return
			}
			if !idle {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), w.srv.Timeout(w.h.opts.Timeout))
			err := s.ping(ctx)
			cancel()
			if err == nil {
				continue
			}
			w.mu.Lock()
			if w.s == s && w.inflight == 0 {
				w.s = nil
				w.failed(&failure.Error{Kind: failure.KindTimeout, Server: w.srv.Name, Err: fmt.Errorf("no answer to ping: %w", err)})
				s.up.logger().Warn("warm server did not answer ping; restarting it on next use", "err", err)
				s.abort()
			}
			w.mu.Unlock()
			return
		}
	}
}

// retire shuts the warm server down for good: at once when no call is
// using it, else when the last call in flight ends (release). A registry
// edit that removes or changes a server takes no new call to its old
// process, and cuts none that had begun: they were admitted under the
// registry as it was, as a per-request server's would have been.
func (w *warm) retire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.retired = true
	if w.idle != nil {
		w.idle.Stop()
	}
	if s := w.s; s != nil && w.inflight == 0 {
		w.s = nil
		s.close()
	}
}

// toolsOf returns the warm session's tools, listing them when the cache is
// empty (first use, or after notifications/tools/list_changed).
func (w *warm) toolsOf(ctx context.Context, s *session, caller *Caller, fresh bool) ([]*mcp.Tool, bool, error) {
	w.mu.Lock()
	tools, gen := w.tools, w.toolsGen
	w.mu.Unlock()
	if tools != nil && !fresh {
		return tools, true, nil
	}
	w.changes.Begin()
	tools, _, err := s.listTools(ctx, caller.listing())
	w.changes.End()
	if err != nil {
		return nil, false, err
	}
	w.mu.Lock()
	current := w.s == s && w.toolsGen == gen
	if current {
		w.tools = tools
	}
	w.mu.Unlock()
	if current {
		w.h.known.put(w.srv, tools, time.Now())
	}
	return tools, false, nil
}

// warmLease is the lease of srv's warm session, started if need be. A
// tools/list that failed transiently is tried again (on a new session when
// the old one is gone); starting the session retries by itself.
func (h *Host) warmLease(ctx context.Context, srv *registry.Server, caller *Caller, fresh bool) (*lease, error) {
	for attempt := 1; ; attempt++ {
		w, s, err := h.pool.acquire(ctx, srv, caller)
		if err != nil {
			return nil, err
		}
		tools, cached, err := w.toolsOf(ctx, s, caller, fresh)
		if err == nil {
			return &lease{s: s, tools: tools, cached: cached,
				relist: func(ctx context.Context) ([]*mcp.Tool, error) {
					tools, _, err := w.toolsOf(ctx, s, caller, true)
					return tools, err
				},
				end: func(err error) { w.release(s, err) },
			}, nil
		}
		w.release(s, err)
		var e *failure.Error
		if !errors.As(err, &e) || !e.Retry.Transient || e.Phase != failure.PhaseList ||
			attempt >= h.opts.Retries || e.Retry.After > srv.Timeout(h.opts.Timeout) {
			if e != nil && attempt > 1 {
				e.Attempts = attempt
			}
			return nil, err
		}
		h.log.WarnContext(ctx, "retrying", "server", srv.Name, "phase", e.Phase, "attempt", attempt+1, "err", err)
		h.retried(srv.Name, e.Phase)
		if err := h.sleep(ctx, attempt, e.Retry.After); err != nil {
			e.Attempts = attempt
			return nil, e
		}
	}
}
