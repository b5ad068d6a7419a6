package pool_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/pool"
	"github.com/colibri-mcp/colibri-mcp/internal/redact"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// upstream is a session.Upstream over an in-memory go-sdk transport to a
// go-sdk server: it ends when the session stops or kills it.
type upstream struct {
	transport mcp.Transport
	done      chan struct{}
	once      sync.Once
	hungup    atomic.Bool // ClosedByServer
}

func (u *upstream) end()                                      { u.once.Do(func() { close(u.done) }) }
func (u *upstream) Transport() mcp.Transport                  { return u.transport }
func (u *upstream) Done() <-chan struct{}                     { return u.done }
func (u *upstream) EndedWithError() bool                      { return false }
func (u *upstream) ClosedByServer() bool                      { return u.hungup.Load() }
func (u *upstream) DescribeEnd() string                       { return "exited with status 0" }
func (u *upstream) BytesRead() int64                          { return 0 }
func (u *upstream) Oversize() bool                            { return false }
func (u *upstream) Track(ctx context.Context) context.Context { return ctx }
func (u *upstream) Diagnose(_ context.Context, e *failure.Error, _ failure.Phase, err error) {
	e.Kind, e.Err = failure.KindUnreachable, err
}
func (u *upstream) ToolError(context.Context) bool { return true }
func (u *upstream) NeverRead(context.Context) bool { return false }
func (u *upstream) Tail() string                   { return "" }
func (u *upstream) Unstick(context.Context) func() { return func() {} }
func (u *upstream) Lowers() bool                   { return true }
func (u *upstream) CloseConn()                     {}
func (u *upstream) Stop(time.Duration)             { u.end() }
func (u *upstream) Kill()                          { u.end() }
func (u *upstream) Logger() *slog.Logger           { return slog.New(slog.DiscardHandler) }
func (u *upstream) Secrets() *redact.Set           { return redact.New(nil) }
func (u *upstream) PID() int                       { return 0 }

// opener is a pool's Options.Open over in-memory servers: it counts the
// opens, holds each until gate is closed (when set), and fails with err
// (when set).
type opener struct {
	t     *testing.T
	opens atomic.Int32
	gate  chan struct{}
	err   error

	mu   sync.Mutex
	last *upstream // the upstream of the last session opened
}

func (o *opener) open(ctx context.Context, srv *registry.Server, caller *session.Caller) (*session.Session, error) {
	o.opens.Add(1)
	if o.gate != nil {
		<-o.gate
	}
	if o.err != nil {
		return nil, o.err
	}
	server := mcp.NewServer(&mcp.Implementation{Name: srv.Name, Version: "1"}, nil)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		return nil, err
	}
	o.t.Cleanup(func() { ss.Close() })
	up := &upstream{transport: ct, done: make(chan struct{})}
	cfg := session.Config{Server: srv.Name, Timeout: time.Minute, CallTimeout: time.Minute, MaxResultBytes: 1 << 20,
		TerminateGrace: 5 * time.Second, Version: "test", Background: func(f func()) { f() }}
	timer := session.NewTimer(ctx, cfg.Timeout, 0)
	defer timer.Stop()
	s, err := session.Open(ctx, timer, cfg, up, caller)
	if err == nil {
		o.mu.Lock()
		o.last = up
		o.mu.Unlock()
	}
	return s, err
}

func newPool(t *testing.T, o *opener, threshold int) *pool.Pool {
	o.t = t
	p := pool.New(pool.Options{Open: o.open, Timeout: time.Minute, CircuitThreshold: threshold,
		Cooldown: time.Hour, CooldownMax: time.Hour, Log: slog.New(slog.DiscardHandler)})
	t.Cleanup(p.Close)
	return p
}

func persistent(name string) *registry.Server {
	return &registry.Server{Name: name, Command: "/bin/true", Lifecycle: registry.Persistent}
}

// After CircuitThreshold process-level failures in a row, a server fails
// fast, kind unavailable, naming the count and the last error, and is not
// started again during the cool-down; failures that are not the process's
// doing (config) never open it.
func TestCircuitOpensAfterThreshold(t *testing.T) {
	crash := &failure.Error{Kind: failure.KindCrashed, Server: "s", Err: errors.New("exited with status 1"), StderrTail: "boom"}
	o := &opener{err: crash}
	p := newPool(t, o, 3)
	srv := persistent("s")
	for i := range 3 {
		if _, _, err := p.Acquire(t.Context(), srv, nil); failure.KindOf(err) != failure.KindCrashed {
			t.Fatalf("start %d: kind %s (%v), want crashed", i+1, failure.KindOf(err), err)
		}
	}
	_, _, err := p.Acquire(t.Context(), srv, nil)
	var e *failure.Error
	if !errors.As(err, &e) || e.Kind != failure.KindUnavailable {
		t.Fatalf("after 3 failures: %v (kind %s), want unavailable", err, failure.KindOf(err))
	}
	if !strings.Contains(e.Error(), "failed 3 times in a row") || !strings.Contains(e.Error(), "exited with status 1") || e.StderrTail != "boom" {
		t.Errorf("err %v, tail %q; want the count, the last error and its stderr tail", e, e.StderrTail)
	}
	if n := o.opens.Load(); n != 3 {
		t.Errorf("%d starts, want 3: an open circuit starts nothing", n)
	}
	if !p.CircuitOpen("s", time.Now()) {
		t.Errorf("CircuitOpen says no")
	}

	// A configuration error is not the process's: any number of them
	// leaves the circuit closed.
	cfg := &opener{err: &failure.Error{Kind: failure.KindConfig, Server: "c", Err: errors.New("env X: ${TOKEN} is not set")}}
	pc := newPool(t, cfg, 1)
	for range 3 {
		if _, _, err := pc.Acquire(t.Context(), persistent("c"), nil); failure.KindOf(err) != failure.KindConfig {
			t.Errorf("kind %s (%v), want config every time", failure.KindOf(err), err)
		}
	}
}

// Requests that arrive while a warm server starts wait for that start and
// share it: one open, one session for all.
func TestWaitersShareOneStart(t *testing.T) {
	o := &opener{gate: make(chan struct{})}
	p := newPool(t, o, 3)
	srv := persistent("s")
	const n = 8
	type got struct {
		w   *pool.Warm
		s   *session.Session
		err error
	}
	results := make(chan got, n)
	for range n {
		go func() {
			w, s, err := p.Acquire(t.Context(), srv, nil)
			results <- got{w, s, err}
		}()
	}
	testwait.Eventually(t, "every request waits for the start", func() bool {
		buf := make([]byte, 1<<20)
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), "pool.(*Warm).get(") >= n
	})
	close(o.gate)
	var first *session.Session
	for range n {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if first == nil {
			first = r.s
		}
		if r.s != first {
			t.Errorf("two sessions for one server")
		}
		defer r.w.Release(r.s, nil)
	}
	if got := o.opens.Load(); got != 1 {
		t.Errorf("%d requests started it %d times, want once", n, got)
	}
}

// An entry the registry no longer has is retired: its idle warm process
// is stopped at once, and the next request for such a server starts a
// fresh one. An entry the registry keeps unchanged keeps its process.
func TestRetainRetiresARemovedEntry(t *testing.T) {
	o := &opener{}
	p := newPool(t, o, 3)
	srv := persistent("s")
	w, s, err := p.Acquire(t.Context(), srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Release(s, nil)
	o.mu.Lock()
	up := o.last
	o.mu.Unlock()

	p.Retain(&registry.Registry{Servers: map[string]*registry.Server{"s": srv}})
	if session.Ended(up, 0) {
		t.Fatal("an entry the registry kept was stopped")
	}
	if got := p.Status("s"); len(got) != 1 {
		t.Errorf("status %+v, want its one warm process", got)
	}
	p.Retain(&registry.Registry{Servers: map[string]*registry.Server{}})
	if !session.Ended(up, 0) { // teardown runs in Background, here at once
		t.Errorf("the removed entry's warm process was not stopped")
	}
	if got := p.Status("s"); len(got) != 0 {
		t.Errorf("status %+v after removal, want none", got)
	}
	w, s, err = p.Acquire(t.Context(), srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Release(s, nil)
	if n := o.opens.Load(); n != 2 {
		t.Errorf("%d starts, want 2: the entry back starts a fresh process", n)
	}
}

// A retired server's request in flight finishes on its process, which
// stops when that request releases it.
func TestRetainLetsTheCallInFlightFinish(t *testing.T) {
	o := &opener{}
	p := newPool(t, o, 3)
	srv := persistent("s")
	w, s, err := p.Acquire(t.Context(), srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.mu.Lock()
	up := o.last
	o.mu.Unlock()
	p.Retain(&registry.Registry{Servers: map[string]*registry.Server{}})
	if session.Ended(up, 0) {
		t.Fatal("retiring the entry stopped the process under a request in flight")
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("the request in flight lost its server: %v", err)
	}
	w.Release(s, nil)
	if !session.Ended(up, 0) {
		t.Errorf("the retired process was not stopped when its last request released it")
	}
}

// An open circuit cools down: it refuses every start until Cooldown has
// passed, then lets one trial through; a trial that fails opens it again
// for twice as long, at most CooldownMax; one that succeeds closes it, and
// failures count from zero again. (In a synctest bubble: the cool-downs
// pass on the bubble's clock, to the nanosecond, with no real wait.)
func TestCircuitCoolsDownAndDoubles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		crash := &failure.Error{Kind: failure.KindCrashed, Server: "s", Err: errors.New("exited with status 1")}
		o := &opener{t: t, err: crash}
		p := pool.New(pool.Options{Open: o.open, Timeout: time.Minute, CircuitThreshold: 2,
			Cooldown: time.Second, CooldownMax: 3 * time.Second, Log: slog.New(slog.DiscardHandler)})
		defer p.Close()
		srv := persistent("s")
		acquire := func(want failure.Kind, when string) {
			t.Helper()
			w, s, err := p.Acquire(t.Context(), srv, nil)
			if (want == "") != (err == nil) || err != nil && failure.KindOf(err) != want {
				t.Fatalf("%s: kind %q (%v), want %q", when, failure.KindOf(err), err, want)
			}
			if err == nil {
				w.Release(s, nil)
			}
		}
		acquire(failure.KindCrashed, "the first start")
		acquire(failure.KindCrashed, "the second start") // the circuit opens, for a second
		for _, cooldown := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
			acquire(failure.KindUnavailable, "as the circuit opens")
			time.Sleep(cooldown - 1)
			acquire(failure.KindUnavailable, "a nanosecond before the cool-down ends")
			time.Sleep(time.Nanosecond) // the cool-down ends
			if cooldown < 3*time.Second {
				acquire(failure.KindCrashed, "the trial after "+cooldown.String()) // fails: open again, twice as long (at most 3 s)
			}
		}
		o.err = nil
		acquire("", "the trial after the longest cool-down") // succeeds: closed
		if n := o.opens.Load(); n != 5 {
			t.Errorf("%d starts, want 5: two failures, two failed trials, one good one", n)
		}
		if p.CircuitOpen("s", time.Now()) {
			t.Errorf("the circuit is still open after a start succeeded")
		}
	})
}

// A warm process that ends while a request is in flight on it is not
// aborted under that request: the server may have written its answer just
// before it exited, read but not yet handed to the request, and the abort
// closed the connection under it ("file already closed", a crash, instead
// of the answer). The next request gets a fresh process; the ended one is
// aborted when its last request is released.
func TestEndedSessionAbortedAfterItsLastRequest(t *testing.T) {
	_, w, s, s2 := endedAndReplaced(t, persistent("s"))
	if s.Closing() {
		t.Fatal("the ended session was aborted under the request in flight on it")
	}
	w.Release(s, nil)
	if !s.Closing() {
		t.Error("the ended session was not aborted once its last request was released")
	}
	if s2.Closing() {
		t.Error("releasing the ended session's request aborted the fresh one")
	}
	w.Release(s2, nil)
	if s2.Closing() {
		t.Error("the fresh session was closed at its release")
	}
}

// A warm process that closed its end (its stdout: it is exiting) but has
// not been reaped is lent to no request: one written to it now would be
// lost, and fail as a crash.
func TestHungUpSessionNotLent(t *testing.T) {
	o := &opener{}
	p := newPool(t, o, 3)
	srv := persistent("s")
	w, s, err := p.Acquire(t.Context(), srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Release(s, nil)
	o.mu.Lock()
	o.last.hungup.Store(true)
	o.mu.Unlock()
	w2, s2, err := p.Acquire(t.Context(), srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Release(s2, nil)
	if s2 == s || o.opens.Load() != 2 {
		t.Fatalf("a session whose server hung up was lent again (opens %d)", o.opens.Load())
	}
	if !s.Closing() {
		t.Error("the hung-up session, with no request in flight, was not aborted")
	}
}

// endedAndReplaced has a request in flight on a session whose process
// then ended, and a fresh session taken for the next request: w, the
// ended a and its replacement b, both in flight.
func endedAndReplaced(t *testing.T, srv *registry.Server) (p *pool.Pool, w *pool.Warm, a, b *session.Session) {
	t.Helper()
	o := &opener{}
	p = newPool(t, o, 3)
	w, a, err := p.Acquire(t.Context(), srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.mu.Lock()
	first := o.last
	o.mu.Unlock()
	first.end()
	_, b, err = p.Acquire(t.Context(), srv, nil)
	if err != nil || b == a {
		t.Fatalf("the next request got %v, %v", b, err)
	}
	return p, w, a, b
}

// Whether the current session is idle is its own requests' to say, not
// those still in flight on a session it replaced: a registry edit retires
// it once its own are done (it was left running until colibri exited),
// and its idle timeout is armed (it never was).
func TestReplacementIdleWhileEndedInFlight(t *testing.T) {
	t.Run("retired", func(t *testing.T) {
		p, w, a, b := endedAndReplaced(t, persistent("s"))
		w.Release(b, nil)
		p.Retain(&registry.Registry{}) // the entry removed
		if !b.Closing() {
			t.Error("the retired server's idle session was not closed while a request on the ended one was in flight")
		}
		w.Release(a, nil)
	})
	t.Run("idle timeout", func(t *testing.T) {
		srv := persistent("s")
		srv.IdleMS = 20
		_, w, a, b := endedAndReplaced(t, srv)
		w.Release(b, nil)
		testwait.Eventually(t, "the idle session closed", b.Closing)
		w.Release(a, nil)
	})
}

// A request released as crashed does not abort the session under another
// request in flight on it, which may be taking an answer already read;
// the last release does.
func TestCrashedReleaseWaitsForTheOthers(t *testing.T) {
	o := &opener{}
	p := newPool(t, o, 3)
	srv := persistent("s")
	w, a, err := p.Acquire(t.Context(), srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, a2, err := p.Acquire(t.Context(), srv, nil)
	if err != nil || a2 != a {
		t.Fatal("two requests were not lent the one warm session", err)
	}
	w.Release(a, &failure.Error{Kind: failure.KindCrashed, Server: "s", Err: errors.New("exited with status 1")})
	if a.Closing() {
		t.Error("aborted under the other request still in flight on it")
	}
	w.Release(a2, nil)
	if !a.Closing() {
		t.Error("not aborted at the last release")
	}
}
