// Package pool keeps the warm sessions of "persistent" servers: one per
// server and set of capabilities offered (a warm process cannot offer a
// capability to one caller and hide it from another), shared by the
// requests in flight, pinged while idle, closed after idle_timeout_ms,
// retired when the registry entry changes or goes, and failing fast for a
// cool-down after repeated failures (the circuit). It opens sessions
// through Options.Open, never by itself.
//
//	p := pool.New(pool.Options{Open: h.openRetrying, …})
//	w, s, err := p.Acquire(ctx, srv, caller)
//	tools, cached, err := w.Tools(ctx, s, caller, false)
//	… s.CallTool(…) …
//	w.Release(s, err)
package pool

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/relist"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Options configure a Pool.
type Options struct {
	// Open opens a session of srv for caller, retrying transient failures.
	Open func(ctx context.Context, srv *registry.Server, caller *session.Caller) (*session.Session, error)
	// Timeout is the default phase timeout: a ping's bound.
	Timeout time.Duration
	// PingInterval is how often an idle warm session is pinged
	// (keepalive_ms overrides it per entry).
	PingInterval time.Duration
	// CircuitThreshold is how many process-level failures in a row make a
	// server fail fast ("unavailable") for a cool-down, which starts at
	// Cooldown and doubles up to CooldownMax.
	CircuitThreshold      int
	Cooldown, CooldownMax time.Duration
	// Log receives the pool's lines.
	Log *slog.Logger
	// Listed is told of each list a warm session read, and whether that
	// session was offered no capability (plain: the list list_tools
	// shows); ToolsChanged of each notifications/tools/list_changed one
	// sent (that act).
	Listed       func(srv *registry.Server, tools []*mcp.Tool, plain bool)
	ToolsChanged func(srv *registry.Server)
	// Held reports whether callers hold something on a warm session that
	// only its running process keeps (serve --only's resource
	// subscriptions): while it does, the idle timeout waits another
	// period rather than close the process.
	Held func(s *session.Session) bool
}

// Pool holds the warm sessions of persistent servers. It is safe for
// concurrent use.
type Pool struct {
	o       Options
	mu      sync.Mutex
	servers map[warmKey]*Warm
	closed  bool
}

// New returns an empty Pool.
func New(o Options) *Pool { return &Pool{o: o} }

type warmKey struct {
	server string
	caps   string // the capabilities offered, e.g. "elicitation,roots,sampling"
	part   string // session.Caller.Partition: callers that share no warm session with others
}

// Warm is one warm server: its session when up, and what it has learnt of
// failures.
type Warm struct {
	key warmKey
	srv *registry.Server
	fp  [sha256.Size]byte // the registry entry it was started from
	p   *Pool

	mu        sync.Mutex
	s         *session.Session
	starting  *startAttempt // the start under way, which waiters share
	started   time.Time
	tools     []*mcp.Tool // the session's list, nil until listed or after list_changed
	toolsGen  int         // bumped by list_changed
	changes   relist.Gate // which list_changed act
	failures  int         // consecutive process-level failures
	lastErr   error
	openUntil time.Time // the circuit is open (calls fail fast) until then
	cooldown  time.Duration
	idle      *time.Timer
	retired   bool // shut down: registry edit, removal or colibri exiting
	// uses counts the requests in flight on each session: the current
	// one's say whether it is idle (its idle timer, its pings, a retire),
	// whatever is still in flight on sessions it replaced; ended holds the sessions whose process ended while
	// requests were in flight on them (watch, get): each is aborted once
	// its last request is released, so that an answer the server wrote
	// just before it exited, read but not yet handed to its request, is
	// not dropped by the abort.
	uses  map[*session.Session]int
	ended map[*session.Session]bool
}

// endLocked aborts dead, whose process has ended or is ending, now or,
// while requests are in flight on it, when the last is released; it
// reports whether that is now: the caller then aborts it, else kills its
// process group at once (end). What is left of
// the group dies now either way: a helper that held the server's stdout
// would keep the requests in flight waiting for an end of the pipe that
// never comes.
func (w *Warm) endLocked(dead *session.Session) (now bool) {
	if w.uses[dead] == 0 {
		return true
	}
	if w.ended == nil {
		w.ended = map[*session.Session]bool{}
	}
	w.ended[dead] = true
	return false
}

// end is what endLocked's caller does once w.mu is let go.
func end(dead *session.Session, now bool) {
	if now {
		dead.Abort()
		return
	}
	dead.Upstream().Kill()
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

// Process describes a warm process of a persistent server.
type Process struct {
	PID          int           `json:"pid"`
	Uptime       time.Duration `json:"-"`
	UptimeMS     int64         `json:"uptime_ms"`
	Capabilities []string      `json:"capabilities"`
}

// Fingerprint identifies the registry entry a warm process was started from:
// an entry whose fingerprint changed is another process.
func Fingerprint(srv *registry.Server) [sha256.Size]byte {
	return sha256.Sum256([]byte(srv.ProcessKey()))
}

// Acquire returns srv's warm session for caller, starting it if need be. The
// caller must release it.
func (p *Pool) Acquire(ctx context.Context, srv *registry.Server, caller *session.Caller) (*Warm, *session.Session, error) {
	key := warmKey{srv.Name, caller.Capabilities(), partitionOf(caller)}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, &failure.Error{Kind: failure.KindUnavailable, Server: srv.Name, Err: errors.New("colibri is shutting down")}
	}
	w := p.servers[key]
	var fp [sha256.Size]byte
	if w == nil || w.srv != srv { // the same parsed entry needs no fingerprint
		fp = Fingerprint(srv)
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
		w = &Warm{key: key, srv: srv, fp: fp, p: p}
		if p.servers == nil {
			p.servers = map[warmKey]*Warm{}
		}
		p.servers[key] = w
	}
	p.mu.Unlock()
	s, err := w.get(ctx, caller)
	return w, s, err
}

func partitionOf(c *session.Caller) string {
	if c == nil {
		return ""
	}
	return c.Partition
}

// Retain shuts down the warm processes of servers the registry no longer
// has, or has changed.
func (p *Pool) Retain(reg *registry.Registry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, w := range p.servers {
		srv, ok := reg.Servers[key.server]
		if !ok || !srv.IsPersistent() || (srv != w.srv && Fingerprint(srv) != w.fp) {
			delete(p.servers, key)
			w.retire()
		}
	}
}

// Close shuts every warm process down; no new one starts.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for key, w := range p.servers {
		delete(p.servers, key)
		w.retire()
	}
}

// Status lists the warm processes of server.
func (p *Pool) Status(server string) []Process {
	p.mu.Lock()
	ws := make([]*Warm, 0, len(p.servers))
	for key, w := range p.servers {
		if key.server == server {
			ws = append(ws, w)
		}
	}
	p.mu.Unlock()
	var out []Process
	for _, w := range ws {
		w.mu.Lock()
		if w.s != nil && !session.Ended(w.s.Upstream(), 0) {
			up := time.Since(w.started)
			caps := []string{}
			if w.key.caps != "" {
				caps = strings.Split(w.key.caps, ",")
			}
			out = append(out, Process{PID: w.s.Upstream().PID(), Uptime: up, UptimeMS: up.Milliseconds(), Capabilities: caps})
		}
		w.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Process) int {
		return strings.Compare(strings.Join(a.Capabilities, ","), strings.Join(b.Capabilities, ","))
	})
	return out
}

// get returns the warm session, starting one (once, for all waiting
// callers) when there is none. While the circuit is open it fails fast.
func (w *Warm) get(ctx context.Context, caller *session.Caller) (*session.Session, error) {
	for {
		w.mu.Lock()
		switch {
		case w.retired:
			w.mu.Unlock()
			return nil, &failure.Error{Kind: failure.KindUnavailable, Server: w.srv.Name, Err: errors.New("the server was shut down (registry edited or colibri exiting)")}
		case w.s != nil && !session.Ended(w.s.Upstream(), 0) && !w.s.Upstream().ClosedByServer():
			s := w.s
			if w.uses == nil {
				w.uses = map[*session.Session]int{}
			}
			w.uses[s]++
			if w.idle != nil {
				w.idle.Stop()
			}
			w.mu.Unlock()
			return s, nil
		case w.s != nil:
			// It died, or closed its end and is about to (a request
			// written to it now would be lost, and fail as a crash), and
			// watch has not noticed yet: end it here, so that replacing it
			// never leaks its process slot.
			dead := w.s
			w.s = nil
			now := w.endLocked(dead)
			w.mu.Unlock()
			end(dead, now)
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
				return nil, &failure.Error{Kind: failure.KindCancelled, Server: w.srv.Name, Phase: failure.PhaseSpawn, Err: session.ErrCancelled}
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

		s, err := w.p.o.Open(ctx, w.srv, caller)

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
			s.Close()
			continue
		}
		w.s, w.started, w.tools = s, time.Now(), nil
		w.mu.Unlock()
		s.OnToolsChanged(func() {
			// Absorbed at the cost of a lock: one during colibri's own
			// list, or after one already marked the list stale, says
			// nothing new (internal/relist).
			act, over := w.changes.Notify()
			if over {
				s.Upstream().Logger().Warn("the server keeps sending notifications/tools/list_changed; ignoring them until colibri lists its tools again", "bound", relist.MaxPerList)
			}
			if !act {
				return
			}
			w.mu.Lock()
			w.tools = nil
			w.toolsGen++
			w.mu.Unlock()
			// Whichever warm process said so: a list that changes in
			// one process often changes for all (the server's own state).
			if f := w.p.o.ToolsChanged; f != nil {
				f(w.srv)
			}
		})
		go w.watch(s)
		// The request that started it is named (request_id, from ctx); the
		// process's later lines carry no request's id: it serves many.
		s.Upstream().Logger().InfoContext(ctx, "warm server started", "capabilities", w.key.caps)
	}
}

// failed counts a process-level failure (with w.mu held) and opens the
// circuit after too many in a row. Permanent failures (configuration, a
// missing command, jail settings) are not the process's doing and do not
// count: they fail at once anyway.
func (w *Warm) failed(err error) {
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
	o := w.p.o
	if w.failures >= o.CircuitThreshold {
		switch {
		case w.cooldown == 0:
			w.cooldown = o.Cooldown
		default:
			w.cooldown = min(2*w.cooldown, o.CooldownMax)
		}
		w.openUntil = time.Now().Add(w.cooldown)
		w.p.o.Log.Warn("warm server keeps failing; cooling down", "server", w.srv.Name,
			"failures", w.failures, "cooldown", w.cooldown, "err", err)
	}
}

// Release ends one request's use of s. A process-level failure ends the
// process (its whole group): the next request starts a fresh one. A timeout
// is not one: it cancelled its own call (the server was sent
// notifications/cancelled), and the calls that share the process go on;
// the idle ping finds a server that is wedged for everyone.
func (w *Warm) Release(s *session.Session, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.uses[s] <= 0 {
		// Not lent, or released already: counting it would free the
		// session under a request still using it.
		s.Upstream().Logger().Error("pool: a release of a session with no request in flight on it", "server", w.srv.Name)
		return
	}
	if w.uses[s]--; w.uses[s] <= 0 {
		delete(w.uses, s)
		if w.ended[s] {
			delete(w.ended, s)
			s.Abort() // its process has ended: the kill is of what it left
		}
	}
	var e *failure.Error
	switch {
	case err == nil || !errors.As(err, &e):
		if w.s == s {
			w.failures, w.cooldown = 0, 0
		}
	case e.Kind == failure.KindTooLarge:
		// Its output is past every bound: it goes now, whatever else is
		// in flight on it.
		if w.s == s {
			w.s = nil
			w.failed(err)
			s.Abort()
		}
	case e.Kind == failure.KindCrashed || session.Ended(s.Upstream(), 0):
		// The others in flight on it end at once, but may first take an
		// answer already read (endLocked).
		if w.s == s {
			w.s = nil
			w.failed(err)
			end(s, w.endLocked(s))
		}
	}
	// The current session, whichever was released: the last request on
	// it may have ended while one on a session it replaced was in flight.
	if cur := w.s; cur != nil && w.uses[cur] == 0 {
		if w.retired {
			w.s = nil
			cur.Close()
			return
		}
		if cur == s {
			w.armIdle(cur)
		}
	}
}

// armIdle closes s after the idle timeout, unless it is used again first
// (with w.mu held).
func (w *Warm) armIdle(s *session.Session) {
	if w.idle != nil {
		w.idle.Stop()
	}
	w.idle = time.AfterFunc(w.srv.IdleTimeout(), func() {
		w.mu.Lock()
		if w.s != s || w.uses[s] > 0 {
			w.mu.Unlock()
			return
		}
		if held := w.p.o.Held; held != nil && held(s) {
			w.armIdle(s)
			w.mu.Unlock()
			s.Upstream().Logger().Debug("warm server idle, kept: a caller holds a subscription on it", "idle_timeout", w.srv.IdleTimeout())
			return
		}
		w.s = nil
		w.mu.Unlock()
		s.Upstream().Logger().Info("warm server idle; closing it", "idle_timeout", w.srv.IdleTimeout())
		s.Close()
	})
}

// watch follows a warm session until it ends: it pings the server while
// idle, to find one that is wedged, and notices a process that exits
// between requests.
func (w *Warm) watch(s *session.Session) {
	// keepalive_ms: 0 turns pings off (a nil channel never fires).
	var tick <-chan time.Time
	if d := w.srv.PingInterval(w.p.o.PingInterval); d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-s.Upstream().Done():
			w.mu.Lock()
			if w.s == s {
				w.s = nil
				w.failed(&failure.Error{Kind: failure.KindCrashed, Server: w.srv.Name,
					Err: fmt.Errorf("the warm server %s between requests", s.Upstream().DescribeEnd()), StderrTail: s.Upstream().Tail()})
			}
			// Requests in flight on it end at once (the connection reads
			// its end), but may first take an answer already read: the
			// last of them aborts it (Release).
			now := w.endLocked(s)
			w.mu.Unlock()
			end(s, now) // whoever replaced it may have already: abort runs once
			return
		case <-tick:
			w.mu.Lock()
			current, idle := w.s == s, w.uses[s] == 0
			w.mu.Unlock()
			if !current {
				return
			}
			if !idle {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), w.srv.Timeout(w.p.o.Timeout))
			err := s.Ping(ctx)
			cancel()
			if err == nil {
				continue
			}
			w.mu.Lock()
			if w.s == s && w.uses[s] == 0 {
				w.s = nil
				w.failed(&failure.Error{Kind: failure.KindTimeout, Server: w.srv.Name, Err: fmt.Errorf("no answer to ping: %w", err)})
				s.Upstream().Logger().Warn("warm server did not answer ping; restarting it on next use", "err", err)
				s.Abort()
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
func (w *Warm) retire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.retired = true
	if w.idle != nil {
		w.idle.Stop()
	}
	if s := w.s; s != nil && w.uses[s] == 0 {
		w.s = nil
		s.Close()
	}
}

// Tools returns the warm session's tools, listing them when the cache is
// empty (first use, or after notifications/tools/list_changed).
func (w *Warm) Tools(ctx context.Context, s *session.Session, caller *session.Caller, fresh bool) ([]*mcp.Tool, bool, error) {
	w.mu.Lock()
	tools, gen := w.tools, w.toolsGen
	w.mu.Unlock()
	if tools != nil && !fresh {
		return tools, true, nil
	}
	w.changes.Begin()
	tools, _, err := s.ListTools(ctx, caller.Listing())
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
	if current && w.p.o.Listed != nil {
		w.p.o.Listed(w.srv, tools, w.key.caps == "")
	}
	return tools, false, nil
}

// CircuitOpen reports whether any warm server of server fails fast now.
func (p *Pool) CircuitOpen(server string, now time.Time) bool {
	p.mu.Lock()
	ws := make([]*Warm, 0, len(p.servers))
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
