package host_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

func persistent(name string) *registry.Server {
	srv := fake(name)
	srv.Lifecycle = registry.Persistent
	return srv
}

func text(t *testing.T, res *mcp.CallToolResult, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("isError: %v", res.Content)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func callText(t *testing.T, h *harness, srv *registry.Server, tool string, args map[string]any) string {
	t.Helper()
	res, err := h.CallTool(t.Context(), srv, tool, session.ArgumentsOf(args), nil, nil)
	return text(t, res, err)
}

func pidOf(t *testing.T, h *harness, srv *registry.Server) int {
	t.Helper()
	pid, _ := strconv.Atoi(callText(t, h, srv, "pid", nil))
	return pid
}

// One warm process serves every call, keeping its state, until it is shut down.
func TestWarmReusesOneProcess(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := persistent("ok")
	for want := 1; want <= 5; want++ {
		if got := callText(t, h, srv, "count", nil); got != strconv.Itoa(want) {
			t.Fatalf("count = %s, want %d: state was not kept", got, want)
		}
	}
	if _, err := h.ListTools(t.Context(), srv, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(h.spawned()); n != 1 {
		t.Errorf("%d processes started, want 1", n)
	}
	warm := h.Warm("ok")
	if len(warm) != 1 || warm[0].PID != h.spawned()[0] {
		t.Errorf("Warm = %+v, want the one process %v", warm, h.spawned())
	}
}

// Concurrent calls share the warm session safely.
func TestWarmConcurrentCalls(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := persistent("ok")
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Go(func() {
			msg := strconv.Itoa(i)
			res, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": msg}), nil, nil)
			if err == nil && res.Content[0].(*mcp.TextContent).Text != "Echo: "+msg {
				err = os.ErrInvalid
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := len(h.spawned()); n != 1 {
		t.Errorf("%d processes for 50 concurrent calls, want 1 (started once)", n)
	}
}

// A crash ends the process; calls in flight on it fail crashed, and the
// next call starts a fresh process.
func TestWarmCrashRestarts(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := persistent("ok")
	first := pidOf(t, h, srv)
	inflight := make(chan error, 1)
	started := filepath.Join(t.TempDir(), "started")
	go func() {
		_, err := h.CallTool(t.Context(), srv, "sleep", session.ArgumentsOf(map[string]any{"ms": 60_000, "started": started}), nil, nil)
		inflight <- err
	}()
	waitFile(t, started, 10*time.Second)
	_, err := h.CallTool(t.Context(), srv, "crash", nil, nil, nil)
	wantKind(t, err, failure.KindCrashed, failure.PhaseCall)
	wantKind(t, <-inflight, failure.KindCrashed, failure.PhaseCall)
	waitGroupGone(t, first, 5*time.Second)
	if second := pidOf(t, h, srv); second == first {
		t.Error("the crashed process was reused")
	}
}

// A call's timeout cancels that call only: a call sharing the process,
// in flight at that moment, runs on to its own end (its own timeout here:
// crashed, had the first timeout ended the process), and the process stays.
func TestWarmTimeoutCancelsThatCallOnly(t *testing.T) {
	h := newHarness(t, host.Options{Timeout: 5 * time.Second})
	srv := persistent("ok")
	srv.CallTimeout = 500
	first := pidOf(t, h, srv)
	dir := t.TempDir()
	call := func(name string) <-chan error {
		errc := make(chan error, 1)
		go func() {
			_, err := h.CallTool(t.Context(), srv, "sleep", session.ArgumentsOf(map[string]any{"ms": 60_000, "started": filepath.Join(dir, name)}), nil, nil)
			errc <- err
		}()
		waitFile(t, filepath.Join(dir, name), 10*time.Second)
		return errc
	}
	a := call("a")
	b := call("b") // in flight when a times out
	wantKind(t, <-a, failure.KindTimeout, failure.PhaseCall)
	wantKind(t, <-b, failure.KindTimeout, failure.PhaseCall)
	if got := pidOf(t, h, srv); got != first {
		t.Error("one call's timeout ended the shared warm process")
	}
}

// A timed-out call whose request is still being written to a warm server
// that reads steadily does not kill the server: the write finishes, the
// call is answered timeout, and the process stays up for the next calls.
// (Killed 100 ms after the timeout, as it once was, a shared process
// failed every call on it.)
func TestTimedOutCallWithAProgressingWriteKeepsTheWarmServer(t *testing.T) {
	h := newHarness(t, host.Options{Timeout: 30 * time.Second})
	srv := persistent("slow-stdin")
	srv.CallTimeout = 200
	// 64 KiB every 50 ms: 1 MiB takes ~0.8 s, each piece well within
	// unstick's second.
	srv.Env = map[string]string{"FAKEMCP_READ": "65536", "FAKEMCP_EVERY_MS": "50"}
	_, err := h.CallTool(t.Context(), srv, "any", session.ArgumentsOf(map[string]any{"payload": strings.Repeat("p", 1<<20)}), nil, nil)
	wantKind(t, err, failure.KindTimeout, failure.PhaseCall)
	pids := h.spawned()
	if len(pids) != 1 {
		t.Fatalf("%d processes started, want 1", len(pids))
	}
	if err := syscall.Kill(pids[0], 0); err != nil {
		t.Fatalf("the warm server is gone after one call's timeout: %v", err)
	}
	if st := h.Warm(srv.Name); len(st) != 1 || st[0].PID != pids[0] {
		t.Errorf("warm processes %+v, want the one started (%d)", st, pids[0])
	}
}

// Requests waiting for a warm server's start share that start's outcome:
// four callers of a server that hangs at initialize all fail at one
// timeout, from one process, not one after another.
func TestWarmWaitersShareTheStart(t *testing.T) {
	const timeout = 500 * time.Millisecond
	h := newHarness(t, host.Options{Timeout: timeout, Retries: 1})
	srv := persistent("hang-init")
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			_, err := h.CallTool(t.Context(), srv, "echo", nil, nil, nil)
			if failure.KindOf(err) != failure.KindTimeout {
				t.Errorf("kind %s: %v", failure.KindOf(err), err)
			}
		})
	}
	wg.Wait()
	within(t, start, timeout+2*time.Second) // one after another would take 4 × 500 ms
	if n := len(h.spawned()); n != 1 {
		t.Errorf("%d starts for 4 waiting requests, want 1 shared", n)
	}
}

// A server wedged between requests is found by the idle ping and replaced.
func TestWarmWedgeFoundByPing(t *testing.T) {
	// The ping's timeout is the server's; 2 s keeps a slow start from
	// failing the test, and the wedge is still found within the wait.
	h := newHarness(t, host.Options{Timeout: 2 * time.Second, PingInterval: 100 * time.Millisecond})
	srv := persistent("ok")
	first := pidOf(t, h, srv)
	callText(t, h, srv, "wedge-later", nil)
	waitGroupGone(t, first, 5*time.Second) // ping unanswered → killed
	if len(h.Warm("ok")) != 0 {
		t.Error("the wedged process is still shown as warm")
	}
	if second := pidOf(t, h, srv); second == first {
		t.Error("the wedged process was reused")
	}
}

// Repeated failures open the circuit: calls fail fast with unavailable and
// nothing is started; after the cool-down a trial start is made, and once
// the server is healthy the circuit closes. (How long each cool-down lasts,
// and its doubling, internal/pool's TestCircuitCoolsDownAndDoubles checks
// on a synctest clock; here the cool-downs are waited out by asking until
// the circuit lets a start through, not by sleeping a guess.)
func TestWarmCircuit(t *testing.T) {
	h := newHarness(t, host.Options{Retries: 1, CircuitThreshold: 3, Cooldown: 300 * time.Millisecond, CooldownMax: time.Second})
	srv := persistent("broken-until-marker")
	marker := filepath.Join(t.TempDir(), "healthy")
	srv.Env["HEALTHY_MARKER"] = marker

	for range 3 {
		_, err := h.CallTool(t.Context(), srv, "echo", nil, nil, nil)
		wantKind(t, err, failure.KindHandshake, failure.PhaseInitialize)
	}
	spawned := len(h.spawned())
	_, err := h.CallTool(t.Context(), srv, "echo", nil, nil, nil)
	e := wantKind(t, err, failure.KindUnavailable, "")
	if len(h.spawned()) != spawned {
		t.Errorf("an open circuit must start nothing (%d processes started)", len(h.spawned())-spawned)
	}
	if e.StderrTail != "not ready" {
		t.Errorf("unavailable should carry the last failure's stderr_tail, got %q", e.StderrTail)
	}

	// past the cool-down: one trial, still broken
	_, err = callPastCooldown(t, h, srv, nil)
	wantKind(t, err, failure.KindHandshake, failure.PhaseInitialize)
	_, err = h.CallTool(t.Context(), srv, "echo", nil, nil, nil)
	wantKind(t, err, failure.KindUnavailable, "") // open again, for twice as long

	os.WriteFile(marker, nil, 0o600)
	if res, err := callPastCooldown(t, h, srv, map[string]any{"message": "back"}); err != nil || res.Content[0].(*mcp.TextContent).Text != "Echo: back" {
		t.Errorf("after the cool-down: %v %+v", err, res)
	}
	// Closed: a later failure counts from zero again.
	callText(t, h, srv, "echo", map[string]any{"message": "again"})
}

// callPastCooldown calls srv's echo until its circuit lets the call
// through (it stops answering unavailable), and returns how that call
// ended.
func callPastCooldown(t *testing.T, h *harness, srv *registry.Server, args map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	var res *mcp.CallToolResult
	var err error
	testwait.Eventually(t, "the circuit to let a start through", func() bool {
		res, err = h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(args), nil, nil)
		return err == nil || failure.KindOf(err) != failure.KindUnavailable
	})
	return res, err
}

// One persistent server failing never slows another: a healthy server is
// started and called while the other still hangs at initialize.
func TestWarmFailingServerDoesNotSlowOthers(t *testing.T) {
	h := newHarness(t, host.Options{Timeout: 30 * time.Second})
	bad, good := persistent("hang-init"), persistent("ok")
	ctx, cancel := context.WithCancel(t.Context())
	badDone := make(chan error, 1)
	go func() {
		_, err := h.CallTool(ctx, bad, "echo", nil, nil, nil)
		badDone <- err
	}()
	for len(h.spawned()) == 0 { // the hanging server is starting
		time.Sleep(5 * time.Millisecond)
	}
	callText(t, h, good, "echo", map[string]any{"message": "x"})
	select {
	case err := <-badDone:
		t.Fatalf("the hanging server's request ended before the healthy one was served: %v", err)
	default:
	}
	cancel()
	wantKind(t, <-badDone, failure.KindCancelled, "")
}

// An unused warm session is closed after idle_timeout_ms.
func TestWarmIdleClose(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := persistent("ok")
	srv.IdleMS = 200
	first := pidOf(t, h, srv)
	waitGroupGone(t, first, 3*time.Second)
	if len(h.Warm("ok")) != 0 {
		t.Error("an idle-closed server is still shown as warm")
	}
	if second := pidOf(t, h, srv); second == first {
		t.Error("the idle-closed process was reused")
	}
}

// An edited entry restarts its warm process on next use; a removed one is
// shut down.
func TestWarmRegistryEdits(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := persistent("ok")
	first := pidOf(t, h, srv)

	edited := persistent("ok")
	edited.Env["EDITED"] = "1"
	h.Retain(&registry.Registry{Servers: map[string]*registry.Server{"ok": edited}})
	waitGroupGone(t, first, 5*time.Second)
	second := pidOf(t, h, edited)
	if second == first {
		t.Error("an edited entry kept its old process")
	}

	h.Retain(&registry.Registry{Servers: map[string]*registry.Server{}})
	waitGroupGone(t, second, 5*time.Second)
	if len(h.Warm("ok")) != 0 {
		t.Error("a removed server is still warm")
	}
}

// A call in flight when its server is removed from the registry (or its
// entry edited) finishes on the old process, which then ends; an edit of
// only the description or tool_prefix restarts nothing.
func TestWarmRegistryEditLetsCallsFinish(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := persistent("ok")
	first := pidOf(t, h, srv)

	described := persistent("ok")
	described.Description, described.ToolPrefix = "now described", "okay"
	h.Retain(&registry.Registry{Servers: map[string]*registry.Server{"ok": described}})
	if pid := pidOf(t, h, described); pid != first {
		t.Errorf("an edit of the description restarted the warm process (%d, then %d)", first, pid)
	}

	started := filepath.Join(t.TempDir(), "started")
	done := make(chan string, 1)
	go func() {
		res, err := h.CallTool(t.Context(), described, "sleep", session.ArgumentsOf(map[string]any{"ms": 500, "started": started}), nil, nil)
		if err != nil {
			done <- err.Error()
			return
		}
		done <- res.Content[0].(*mcp.TextContent).Text
	}()
	waitFile(t, started, 10*time.Second)
	h.Retain(&registry.Registry{Servers: map[string]*registry.Server{}})
	if got := <-done; got != "slept" {
		t.Errorf("the call in flight when its server was removed: %q, want slept", got)
	}
	waitGroupGone(t, first, 5*time.Second)
	if len(h.Warm("ok")) != 0 {
		t.Error("a removed server is still warm")
	}
}

// Cancelling one call reaches that call only: the other finishes, and the
// warm process stays.
func TestWarmCancelReachesTheRightCall(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := persistent("ok")
	first := pidOf(t, h, srv)
	ctx, cancel := context.WithCancel(t.Context())
	dir := t.TempDir()
	cancelled := make(chan error, 1)
	go func() {
		_, err := h.CallTool(ctx, srv, "sleep", session.ArgumentsOf(map[string]any{"ms": 60_000, "started": filepath.Join(dir, "a")}), nil, nil)
		cancelled <- err
	}()
	other := make(chan string, 1)
	go func() {
		res, err := h.CallTool(t.Context(), srv, "sleep", session.ArgumentsOf(map[string]any{"ms": 400, "started": filepath.Join(dir, "b")}), nil, nil)
		if err != nil {
			other <- err.Error()
			return
		}
		other <- res.Content[0].(*mcp.TextContent).Text
	}()
	waitFile(t, filepath.Join(dir, "a"), 10*time.Second)
	waitFile(t, filepath.Join(dir, "b"), 10*time.Second)
	cancel()
	wantKind(t, <-cancelled, failure.KindCancelled, failure.PhaseCall)
	if got := <-other; got != "slept" {
		t.Errorf("the other call got %q", got)
	}
	if pidOf(t, h, srv) != first {
		t.Error("cancelling one call restarted the shared process")
	}
}

// Close shuts every warm process down: nothing survives.
func TestWarmShutdown(t *testing.T) {
	h := newHarness(t, host.Options{})
	a, b := persistent("ok"), persistent("grandchild")
	pidOf(t, h, a)
	pidOf(t, h, b)
	h.Close()
	for _, pid := range h.spawned() {
		if m := proctable.GroupMembers(pid); len(m) != 0 {
			t.Errorf("group %d still has %v after Close", pid, m)
		}
	}
	_, err := h.CallTool(t.Context(), a, "pid", nil, nil, nil)
	wantKind(t, err, failure.KindUnavailable, "")
}

// keepalive_ms sets a warm session's ping interval, and 0 turns pings off:
// while one server has been pinged three times (at its own 20 ms, or at the
// host's 20 ms default), the other (keepalive_ms 0) has had none.
func TestWarmKeepalive(t *testing.T) {
	every := int64(20)
	for _, tc := range []struct {
		name        string
		hostDefault time.Duration
		keepalive   *int64
	}{{"keepalive_ms 20", time.Hour, &every}, {"the default", 20 * time.Millisecond, nil}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			pings := map[string]int{}
			thrice := make(chan struct{})
			h := newHarness(t, host.Options{PingInterval: tc.hostDefault, OnRequest: func(server, method string, _ time.Duration, _ string) {
				if method != "ping" {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if pings[server]++; server == "pinged" && pings[server] == 3 {
					close(thrice)
				}
			}})
			never := int64(0)
			pinged, quiet := persistent("ok"), persistent("ok")
			pinged.Name, pinged.KeepaliveMS = "pinged", tc.keepalive
			quiet.Name, quiet.KeepaliveMS = "quiet", &never
			callText(t, h, quiet, "count", nil)
			callText(t, h, pinged, "count", nil)
			select {
			case <-thrice:
			case <-time.After(5 * time.Second):
				t.Fatal("not pinged three times within 5s")
			}
			mu.Lock()
			defer mu.Unlock()
			if pings["quiet"] != 0 {
				t.Errorf("keepalive_ms 0: pinged %d times", pings["quiet"])
			}
		})
	}
}

// A request that waits for a warm start another request began is not
// failed when that other request's caller gives up: it starts the server
// itself. (It used to get the other caller's cancellation.)
func TestWarmWaiterOutlivesTheStartersCancel(t *testing.T) {
	h := newHarness(t, host.Options{Timeout: 30 * time.Second})
	gate := filepath.Join(t.TempDir(), "gate")
	srv := persistent("gated")
	srv.Env = map[string]string{"FAKEMCP_GATE": gate}

	ctxA, cancelA := context.WithCancel(t.Context())
	errA := make(chan error, 1)
	go func() {
		_, err := h.CallTool(ctxA, srv, "any", nil, nil, nil)
		errA <- err
	}()
	testwait.Eventually(t, "the first request starts the server", func() bool { return len(h.spawned()) == 1 })

	resB := make(chan error, 1)
	go func() {
		res, err := h.CallTool(t.Context(), srv, "any", nil, nil, nil)
		if err == nil && res.IsError {
			err = errors.New("isError")
		}
		resB <- err
	}()
	// B is in warm.get once two goroutines are: with A's start under way,
	// it can only wait for it.
	testwait.Eventually(t, "the second request waits for the start", func() bool {
		buf := make([]byte, 1<<20)
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), "pool.(*Warm).get(") >= 2
	})
	cancelA()
	if err := <-errA; failure.KindOf(err) != failure.KindCancelled {
		t.Fatalf("the cancelled request: kind %s (%v), want cancelled", failure.KindOf(err), err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-resB; err != nil {
		t.Fatalf("the waiting request failed with the other caller's cancel: %v", err)
	}
}

// A storm of requests waiting for one warm start, all of whose callers give
// up at once: none of them starts the server again (each waiter whose
// shared start was cancelled loops back, with its own caller gone too), the
// circuit breaker counts none of it, and the next request starts it once.
func TestWarmStormOfCancelsStartsNothingMore(t *testing.T) {
	h := newHarness(t, host.Options{Timeout: 30 * time.Second, CircuitThreshold: 1})
	gate := filepath.Join(t.TempDir(), "gate")
	srv := persistent("gated")
	srv.Env = map[string]string{"FAKEMCP_GATE": gate}

	const n = 32
	ctx, cancel := context.WithCancel(t.Context())
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := h.CallTool(ctx, srv, "any", nil, nil, nil)
			errs <- err
		}()
	}
	testwait.Eventually(t, "every request is in warm.get", func() bool {
		buf := make([]byte, 1<<20)
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), "pool.(*Warm).get(") >= n
	})
	cancel()
	for range n {
		if err := <-errs; failure.KindOf(err) != failure.KindCancelled {
			t.Errorf("kind %s (%v), want cancelled", failure.KindOf(err), err)
		}
	}
	if got := len(h.spawned()); got != 1 {
		t.Errorf("%d cancelled requests started %d processes, want 1", n, got)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CallTool(t.Context(), srv, "any", nil, nil, nil); err != nil {
		t.Fatalf("the next request (the circuit must not be open): %v", err)
	}
	if got := len(h.spawned()); got != 2 {
		t.Errorf("the next request: %d processes in all, want 2", got)
	}
}

// A warm server killed by a signal while a call is in flight, its stdout
// held by a grandchild: the call fails as crashed at once, what is left of
// the group killed, rather than wait out its call timeout for an end of
// the pipe that the grandchild would never give (a pool that waited for
// the call's release before ending the group did: found by a hostile
// review).
func TestWarmKilledWithHeldStdoutFailsTheCallInFlight(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := persistent("grandchild")
	pid := pidOf(t, h, srv)
	started := filepath.Join(t.TempDir(), "started")
	inflight := make(chan error, 1)
	go func() {
		_, err := h.CallTool(t.Context(), srv, "sleep", session.ArgumentsOf(map[string]any{"ms": 60_000, "started": started}), nil, nil)
		inflight <- err
	}()
	waitFile(t, started, testwait.Bound)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-inflight
	if kind := failure.KindOf(err); kind != failure.KindCrashed {
		t.Fatalf("the call in flight on the killed server: kind %q (%v), want crashed", kind, err)
	}
}

// A warm server that exits right after its answer: the next call, written
// to it in the moment it takes to exit, was never read, and is made again
// on a fresh process (it failed as crashed, about one call in three here);
// whatever the tool, since it never reached it. Either exit status: a
// status of error ends the call as the exit is seen (endOnExit), a status
// of 0 as the pipe ends.
func TestCallWrittenToAnExitingServerIsMadeAgain(t *testing.T) {
	for _, status := range []string{"0", "3"} {
		t.Run("status "+status, func(t *testing.T) {
			h := newHarness(t, host.Options{})
			srv := persistent("subscribe-crash")
			srv.Env = map[string]string{"FAKEMCP_EXIT_STATUS": status}
			for i := range 20 {
				// The answer to crash may be lost to its own exit when the
				// status is an error (endOnExit): that call is not the
				// one under test.
				_, _ = h.CallTool(t.Context(), srv, "crash", nil, nil, nil)
				res, err := h.CallTool(t.Context(), srv, "update", nil, nil, nil)
				if err != nil || res.IsError {
					t.Fatalf("call %d after the server exited: %v %v", i+1, err, res)
				}
			}
		})
	}
}
