package host_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// A request whose caller has already given up starts no process: not a
// one-shot one, and not a warm one (a waiter whose shared start was
// cancelled loops back to start the server itself, and must not when its
// own caller is gone too).
func TestCancelledRequestStartsNoProcess(t *testing.T) {
	h := newHarness(t, host.Options{Timeout: 30 * time.Second})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, srv := range []*registry.Server{fake("ok"), persistent("ok")} {
		_, err := h.CallTool(ctx, srv, "echo", map[string]any{"message": "hi"}, nil)
		if failure.KindOf(err) != failure.KindCancelled {
			t.Errorf("%s (%s): kind %s (%v), want cancelled", srv.Name, srv.Lifecycle, failure.KindOf(err), err)
		}
	}
	if n := len(h.spawned()); n != 0 {
		t.Errorf("a cancelled request started %d processes", n)
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
			_, err := h.CallTool(ctx, srv, "any", nil, nil)
			errs <- err
		}()
	}
	waitUntil(t, "every request is in warm.get", func() bool {
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
	if _, err := h.CallTool(t.Context(), srv, "any", nil, nil); err != nil {
		t.Fatalf("the next request (the circuit must not be open): %v", err)
	}
	if got := len(h.spawned()); got != 2 {
		t.Errorf("the next request: %d processes in all, want 2", got)
	}
}

// A timed-out call whose request is still being written to a server that
// reads its stdin at a trickle (64 KiB every half second: progress, but
// 8 MiB take a minute) is answered within a bounded time after its timeout,
// not when the last byte has gone.
func TestTimedOutCallToATrickleReaderIsAnswered(t *testing.T) {
	h := newHarness(t, host.Options{Timeout: 30 * time.Second})
	srv := fake("slow-stdin")
	srv.CallTimeout = 1000
	srv.Env = map[string]string{"FAKEMCP_READ": "65536", "FAKEMCP_EVERY_MS": "500"}
	start := time.Now()
	_, err := h.CallTool(t.Context(), srv, "any", map[string]any{"payload": strings.Repeat("p", 8<<20)}, nil)
	wantKind(t, err, failure.KindTimeout, failure.PhaseCall)
	// The call's timeout, the 10 s ceiling, and slack for a loaded machine.
	within(t, start, 20*time.Second)
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
	_, err := h.CallTool(t.Context(), srv, "any", map[string]any{"payload": strings.Repeat("p", 1<<20)}, nil)
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
