package stdioserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

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

// runnerGoroutines is how many of the runner's goroutines there are.
func runnerGoroutines() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "stdioserve.(*runner).work")
}

// The goroutines kept for the calls Transport.Calls takes end when the
// session is closed, though the context Connect was given goes on: go-sdk's
// Server.Run gives Connect its own, which a session that ends with its
// input does not end. And a call taken once the session is closed runs
// under an ended context.
func TestRunnerGoroutinesEndWithTheSession(t *testing.T) {
	testwait.Eventually(t, "the runners of the tests before to end", func() bool { return runnerGoroutines() == 0 })
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	defer outR.Close()
	ctxs := make(chan context.Context, 2)
	tr := &Transport{Reader: inR, Writer: outW, Calls: func(r *jsonrpc.Request) func(context.Context) *jsonrpc.Response {
		return func(ctx context.Context) *jsonrpc.Response {
			ctxs <- ctx
			return &jsonrpc.Response{ID: r.ID, Result: json.RawMessage(`{}`)}
		}
	}}
	mc, err := tr.Connect(context.Background()) // as Server.Run's lives on
	if err != nil {
		t.Fatal(err)
	}
	mc.(*conn).runner.idle = time.Hour
	out := bufio.NewReader(outR)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"id":1`) {
		t.Fatalf("answer %q, %v", line, err)
	}
	<-ctxs
	if n := runnerGoroutines(); n != 1 {
		t.Fatalf("%d of the runner's goroutines after a call, want the one kept", n)
	}
	mc.Close()
	testwait.Eventually(t, "the runner's goroutine to end with the session", func() bool { return runnerGoroutines() == 0 })
	go io.Copy(io.Discard, out) // the answer, if one is written
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case ctx := <-ctxs:
		if ctx.Err() == nil {
			t.Fatal("a call taken after the session closed runs under a live context")
		}
	case <-time.After(100 * time.Millisecond): // not taken at all: as good
	}
}
