package session

//lint:file-ignore SA1019 colibri relays logging between a caller and a hosted server on purpose: both sides still speak the protocol versions that have it (deprecated, not removed, in 2026-07-28).

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A flood of progress reaches the caller as the first progressBurst, then
// one every progressEvery, the latest value each time, and the last one
// sent before the call's result; every one of them extends the call's
// timeout. (In a synctest bubble: time moves only when every goroutine
// waits, so the flood takes no time at all, and then the clock is moved.)
func TestDampedProgressKeepsTheLatest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRouter("fake", nil, nil)
		var mu sync.Mutex
		var got []float64
		c := &Caller{Progress: func(_ context.Context, p *mcp.ProgressNotificationParams) {
			mu.Lock()
			got = append(got, p.Progress)
			mu.Unlock()
		}}
		kicks := 0
		end := r.begin(t.Context(), c, "colibri-1", func() { kicks++ })
		const n = 10_000
		for i := 1; i <= n/2; i++ {
			r.progress(fmt.Appendf(nil, `{"progressToken":"colibri-1","progress":%d}`, i))
		}
		time.Sleep(progressEvery) // the held one's turn
		synctest.Wait()
		for i := n/2 + 1; i <= n; i++ {
			r.progress(fmt.Appendf(nil, `{"progressToken":"colibri-1","progress":%d}`, i))
		}
		end() // the call returns: the held progress is delivered first
		mu.Lock()
		defer mu.Unlock()
		want := progressBurst + 2 // the burst, the one delivered in its turn, the last
		if len(got) != want || got[progressBurst] != n/2 || got[len(got)-1] != n || kicks != n {
			t.Fatalf("the caller got %d progress notifications (the %dth: %v, the last: %v), the timeout was extended %d times; want %d, %d, %d and %d",
				len(got), progressBurst+1, got[min(progressBurst, len(got)-1)], got[len(got)-1], kicks, want, n/2, n, n)
		}
	})
}

// A flood of log messages reaches the caller as the first logBurst, then
// one every logEvery; the others are dropped, and once the operation ends
// one log message says how many.
func TestDampedLogsCountWhatIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRouter("fake", nil, nil)
		var mu sync.Mutex
		var got []*mcp.LoggingMessageParams
		c := &Caller{Log: func(_ context.Context, p *mcp.LoggingMessageParams) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		}}
		end := r.begin(t.Context(), c, "", func() {})
		const n = 10_000
		for range n / 2 {
			r.log([]byte(`{"level":"info","data":"flood"}`))
		}
		time.Sleep(logEvery) // room for one more
		for range n / 2 {
			r.log([]byte(`{"level":"info","data":"flood"}`))
		}
		end()
		mu.Lock()
		defer mu.Unlock()
		relayed := logBurst + 1
		if len(got) != relayed+1 {
			t.Fatalf("the caller got %d log messages, want %d relayed and one saying how many were dropped", len(got), relayed)
		}
		last := got[len(got)-1]
		says := fmt.Sprintf("colibri dropped %d log messages of server fake", n-relayed)
		if last.Logger != "colibri" || last.Level != "warning" || !strings.Contains(fmt.Sprint(last.Data), says) {
			t.Errorf("the last log message is %+v, want a warning from colibri saying %q", last, says)
		}
		for _, p := range got[:relayed] {
			if p.Logger != "server/fake" {
				t.Fatalf("a relayed log message from %q, want server/fake", p.Logger)
			}
		}
	})
}

// A progress held back is delivered in its turn even when the server sends
// nothing more, before the call ends.
func TestDampedProgressDeliveredInItsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRouter("fake", nil, nil)
		delivered := make(chan float64, progressBurst+1)
		c := &Caller{Progress: func(_ context.Context, p *mcp.ProgressNotificationParams) { delivered <- p.Progress }}
		defer r.begin(t.Context(), c, "colibri-1", func() {})()
		for i := 1; i <= progressBurst+1; i++ {
			r.progress(fmt.Appendf(nil, `{"progressToken":"colibri-1","progress":%d}`, i))
		}
		for range progressBurst {
			<-delivered
		}
		start := time.Now()
		if got := <-delivered; got != progressBurst+1 || time.Since(start) != progressEvery {
			t.Errorf("the held progress %v came after %v; want %d after %v", got, time.Since(start), progressBurst+1, progressEvery)
		}
	})
}
