package stdioserve

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
)

// goroutineID is the running goroutine's number, as its stack trace heads it.
func goroutineID() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf, _ = bytes.CutPrefix(buf, []byte("goroutine "))
	n, _ := strconv.ParseUint(string(buf[:bytes.IndexByte(buf, ' ')]), 10, 64)
	return n
}

// Calls one after another run on the goroutine the first started: a
// goroutine started for each would grow its stack afresh every time.
func TestRunnerReusesItsGoroutine(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRunner(ctx)
	seen := map[uint64]bool{}
	for range 100 {
		done := make(chan struct{})
		r.run(func() {
			seen[goroutineID()] = true
			close(done)
		})
		<-done
	}
	// A call handed on while the goroutine before it is still on its
	// way back to wait starts one more: rarely, never for most.
	if len(seen) > 10 {
		t.Fatalf("100 calls in turn ran on %d goroutines, want the few kept", len(seen))
	}
}

// A call never waits for another: with every goroutine busy, a new one
// starts.
func TestRunnerDoesNotQueue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRunner(ctx)
	release, second := make(chan struct{}), make(chan struct{})
	defer close(release)
	r.run(func() { <-release })
	r.run(func() { close(second) })
	select {
	case <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("a call waited for the one before it")
	}
}

// The goroutines kept end when they have been idle a while, and when the
// session's context ends.
func TestRunnerGoroutinesEnd(t *testing.T) {
	for _, c := range []struct {
		name string
		idle time.Duration
		end  bool
	}{{"idle", 10 * time.Millisecond, false}, {"session ended", time.Hour, true}} {
		t.Run(c.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := newRunner(ctx)
			r.idle = c.idle
			release := make(chan struct{})
			for range 3 {
				r.run(func() { <-release }) // three at once: three goroutines
			}
			if n := runtime.NumGoroutine(); n < before+3 {
				t.Fatalf("%d goroutines running three calls, %d before", n, before)
			}
			close(release)
			if c.end {
				cancel()
			}
			testwait.Eventually(t, "the runner's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
		})
	}
}
