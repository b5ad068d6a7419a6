package session

//lint:file-ignore SA1019 the tests drive the logging that colibri relays on purpose.

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/redact"
)

// fakeUpstream is an Upstream over an in-memory go-sdk transport: it
// "ends" when the test says so (end) or when the session stops or kills
// it, and diagnoses every failure it is asked about as unreachable, so
// that a kind of colibri's own reasons (handshake, timeout, cancelled)
// shows that classify found it.
type fakeUpstream struct {
	transport mcp.Transport
	secrets   *redact.Set
	done      chan struct{}
	once      sync.Once
	withError bool // set before done closes
}

func newFakeUpstream(t mcp.Transport, secrets ...string) *fakeUpstream {
	return &fakeUpstream{transport: t, secrets: redact.New(secrets), done: make(chan struct{})}
}

// end ends the upstream, as a process exiting with status 3 (withError)
// or 0 would.
func (u *fakeUpstream) end(withError bool) {
	u.once.Do(func() {
		u.withError = withError
		close(u.done)
	})
}

func (u *fakeUpstream) Transport() mcp.Transport       { return u.transport }
func (u *fakeUpstream) Done() <-chan struct{}          { return u.done }
func (u *fakeUpstream) EndedWithError() bool           { return Ended(u, 0) && u.withError }
func (u *fakeUpstream) ClosedByServer() bool           { return false }
func (u *fakeUpstream) NeverRead(context.Context) bool { return false }
func (u *fakeUpstream) DescribeEnd() string {
	switch {
	case !Ended(u, 0):
		return "is still running"
	case u.withError:
		return "exited with status 3"
	}
	return "exited with status 0"
}
func (u *fakeUpstream) BytesRead() int64                          { return 0 }
func (u *fakeUpstream) Oversize() bool                            { return false }
func (u *fakeUpstream) Track(ctx context.Context) context.Context { return ctx }
func (u *fakeUpstream) Diagnose(_ context.Context, e *failure.Error, _ failure.Phase, err error) {
	e.Kind, e.Err = failure.KindUnreachable, err
}
func (u *fakeUpstream) ToolError(context.Context) bool { return true }
func (u *fakeUpstream) Tail() string                   { return "the fake's last words" }
func (u *fakeUpstream) Unstick(context.Context) func() { return func() {} }
func (u *fakeUpstream) Lowers() bool                   { return true }
func (u *fakeUpstream) CloseConn()                     {}
func (u *fakeUpstream) Stop(time.Duration)             { u.end(false) }
func (u *fakeUpstream) Kill()                          { u.end(false) }
func (u *fakeUpstream) Logger() *slog.Logger           { return slog.New(slog.DiscardHandler) }
func (u *fakeUpstream) Secrets() *redact.Set           { return u.secrets }
func (u *fakeUpstream) PID() int                       { return 0 }

// testConfig is a session's Config with teardown run at once.
func testConfig() Config {
	return Config{Server: "fake", Timeout: time.Minute, CallTimeout: time.Minute, MaxResultBytes: 1 << 20,
		TerminateGrace: 5 * time.Second, Version: "test", Background: func(f func()) { f() }}
}

// serve connects srv to the far end of a new fake upstream.
func serve(t *testing.T, srv *mcp.Server, secrets ...string) *fakeUpstream {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return newFakeUpstream(ct, secrets...)
}

// open opens a session over up with cfg, for caller.
func open(t *testing.T, cfg Config, up Upstream, caller *Caller) *Session {
	t.Helper()
	timer := NewTimer(t.Context(), cfg.Timeout, 0)
	s, err := Open(t.Context(), timer, cfg, up, caller)
	timer.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

type nameIn struct {
	Name string `json:"name,omitempty"`
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// barrier lets n goroutines go on once all n have reached it.
type barrier struct {
	mu sync.Mutex
	n  int
	ch chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, ch: make(chan struct{})} }

func (b *barrier) wait(ctx context.Context) error {
	b.mu.Lock()
	if b.n--; b.n == 0 {
		close(b.ch)
	}
	b.mu.Unlock()
	select {
	case <-b.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// record is a caller's notifications, safe for concurrent use.
type record struct {
	mu   sync.Mutex
	seen []string
}

func (r *record) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, s)
}

func (r *record) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// Two calls in flight on one session, each sending progress with its own
// token while both are in flight: each caller is told of its own call's
// progress, and of nothing of the other's.
func TestProgressReachesOnlyTheCallOfItsToken(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	inFlight, sent := newBarrier(2), newBarrier(2)
	mcp.AddTool(srv, &mcp.Tool{Name: "report"}, func(ctx context.Context, req *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
		if err := inFlight.wait(ctx); err != nil {
			return nil, nil, err
		}
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Message: "for " + in.Name})
		if err != nil {
			return nil, nil, err
		}
		if err := sent.wait(ctx); err != nil {
			return nil, nil, err
		}
		return textResult("done"), nil, nil
	})
	s := open(t, testConfig(), serve(t, srv), nil)
	records := map[string]*record{"a": {}, "b": {}}
	var wg sync.WaitGroup
	for name, rec := range records {
		wg.Go(func() {
			caller := &Caller{Progress: func(_ context.Context, p *mcp.ProgressNotificationParams) { rec.add(p.Message) }}
			if _, err := s.CallTool(t.Context(), "report", ArgumentsOf(map[string]any{"name": name}), caller); err != nil {
				t.Errorf("call %s: %v", name, err)
			}
		})
	}
	wg.Wait()
	// A call's notifications are delivered before its result returns.
	for name, rec := range records {
		if got, want := rec.get(), []string{"for " + name}; !slices.Equal(got, want) {
			t.Errorf("caller %s was told of progress %q, want %q", name, got, want)
		}
	}
}

// A log message reaches the caller of the one operation in flight, as the
// server's ("server/NAME") and with the session's secrets redacted; one
// sent while two calls are in flight reaches neither caller: nothing
// tells whose it is.
func TestLogReachesTheOneCallInFlightOnly(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	inFlight, sent := newBarrier(2), newBarrier(2)
	mcp.AddTool(srv, &mcp.Tool{Name: "log"}, func(ctx context.Context, req *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
		if in.Name == "solo" {
			return textResult("done"), nil, req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "alone, key s3cr3t-key"})
		}
		if err := inFlight.wait(ctx); err != nil {
			return nil, nil, err
		}
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "from " + in.Name}); err != nil {
			return nil, nil, err
		}
		return textResult("done"), nil, sent.wait(ctx)
	})
	caller := func(rec *record) *Caller {
		return &Caller{LogLevel: "debug", Log: func(_ context.Context, p *mcp.LoggingMessageParams) {
			rec.add(p.Logger + ": " + p.Data.(string))
		}}
	}
	var solo record
	s := open(t, testConfig(), serve(t, srv, "s3cr3t-key"), caller(&solo))
	if _, err := s.CallTool(t.Context(), "log", ArgumentsOf(map[string]any{"name": "solo"}), caller(&solo)); err != nil {
		t.Fatal(err)
	}
	if got, want := solo.get(), []string{"server/fake: alone, key [redacted]"}; !slices.Equal(got, want) {
		t.Fatalf("the one call in flight was told %q, want %q", got, want)
	}
	records := map[string]*record{"a": {}, "b": {}}
	var wg sync.WaitGroup
	for name, rec := range records {
		wg.Go(func() {
			if _, err := s.CallTool(t.Context(), "log", ArgumentsOf(map[string]any{"name": name}), caller(rec)); err != nil {
				t.Errorf("call %s: %v", name, err)
			}
		})
	}
	wg.Wait()
	for name, rec := range records {
		if got := rec.get(); len(got) != 0 {
			t.Errorf("caller %s was told %q while two calls were in flight", name, got)
		}
	}
}

// silentServer reads what the client sends over ct's far end and never
// answers; got is told of the first message.
func silentServer(t *testing.T) (mcp.Transport, <-chan struct{}) {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	conn, err := st.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	got := make(chan struct{})
	go func() {
		first := true
		for {
			if _, err := conn.Read(context.Background()); err != nil {
				return
			}
			if first {
				close(got)
				first = false
			}
		}
	}()
	return ct, got
}

// An upstream that ends with an error status while initialize waits for
// its answer fails the open at once as handshake (a refusal to start,
// never retried), saying how it ended, with its last words; not as a
// timeout after the whole initialize timeout.
func TestExitDuringInitializeIsHandshake(t *testing.T) {
	ct, got := silentServer(t)
	up := newFakeUpstream(ct)
	cfg := testConfig()
	timer := NewTimer(t.Context(), cfg.Timeout, 0)
	defer timer.Stop()
	errc := make(chan error, 1)
	go func() {
		_, err := Open(t.Context(), timer, cfg, up, nil)
		errc <- err
	}()
	<-got // initialize was sent
	up.end(true)
	err := <-errc
	var e *failure.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want a *failure.Error", err)
	}
	if e.Kind != failure.KindHandshake || e.Phase != failure.PhaseInitialize || e.Retry.Transient {
		t.Errorf("kind %s, phase %s, transient %v; want handshake at initialize, not transient", e.Kind, e.Phase, e.Retry.Transient)
	}
	if want := "the server exited with status 3 during initialize"; e.Err == nil || e.Err.Error() != want {
		t.Errorf("err %v, want %q", e.Err, want)
	}
	if e.StderrTail != "the fake's last words" {
		t.Errorf("stderr tail %q, want the upstream's", e.StderrTail)
	}
}

// blockingServer's tool "hold" tells started it runs, then holds until
// its request is cancelled.
func blockingServer() (*mcp.Server, <-chan struct{}) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	started := make(chan struct{}, 1)
	mcp.AddTool(srv, &mcp.Tool{Name: "hold"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ nameIn) (*mcp.CallToolResult, any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	return srv, started
}

// A call that outlives call_timeout_ms is a timeout, saying which phase
// and how long, with the hint to raise call_timeout_ms.
func TestCallPastItsTimeoutIsTimeout(t *testing.T) {
	srv, _ := blockingServer()
	cfg := testConfig()
	cfg.CallTimeout = 50 * time.Millisecond
	s := open(t, cfg, serve(t, srv), nil)
	_, err := s.CallTool(t.Context(), "hold", nil, nil)
	var e *failure.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want a *failure.Error", err)
	}
	if e.Kind != failure.KindTimeout || e.Phase != failure.PhaseCall || e.Tool != "hold" {
		t.Errorf("kind %s, phase %s, tool %q; want timeout at tools/call of hold", e.Kind, e.Phase, e.Tool)
	}
	if want := "no answer to tools/call within 50ms"; e.Err == nil || e.Err.Error() != want {
		t.Errorf("err %v, want %q", e.Err, want)
	}
	if !strings.Contains(e.Hint, "call_timeout_ms") {
		t.Errorf("hint %q, want one about call_timeout_ms", e.Hint)
	}
}

// A call whose caller gave up is cancelled, not a timeout nor the
// upstream's failure.
func TestCallOfACallerWhoGaveUpIsCancelled(t *testing.T) {
	srv, started := blockingServer()
	s := open(t, testConfig(), serve(t, srv), nil)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	_, err := s.CallTool(ctx, "hold", nil, nil)
	var e *failure.Error
	if !errors.As(err, &e) || e.Kind != failure.KindCancelled || !errors.Is(e.Err, ErrCancelled) {
		t.Errorf("err = %v (kind %s), want cancelled by the caller", err, failure.KindOf(err))
	}
}

// An upstream that ends with an error status during a call is crashed,
// transient (the request may be retried on a fresh process), saying how it
// ended.
func TestExitDuringACallIsCrashed(t *testing.T) {
	srv, started := blockingServer()
	up := serve(t, srv)
	s := open(t, testConfig(), up, nil)
	go func() {
		<-started
		up.end(true)
	}()
	_, err := s.CallTool(t.Context(), "hold", nil, nil)
	var e *failure.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want a *failure.Error", err)
	}
	if e.Kind != failure.KindCrashed || !e.Retry.Transient || e.Err.Error() != "the server exited with status 3 during tools/call" {
		t.Errorf("kind %s, transient %v, err %v; want crashed, transient, saying how it ended", e.Kind, e.Retry.Transient, e.Err)
	}
}
