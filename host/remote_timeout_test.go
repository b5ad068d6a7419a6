package host_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
)

// silentListener accepts connections and never answers them (nor closes
// them until the test ends): a remote server that hangs.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// A url entry whose server accepts and never answers fails timeout within
// its timeout_ms and a second, whatever the protocol probe, the GET
// stream and the retries do: the per-phase timeout is what a user waits.
// With timeout_ms 1500 it took 5.5 s.
func TestRemoteSilentServerTimesOutWithinItsBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		transport string
		retries   int
	}{{"", 0}, {"streamable_http", 0}, {"auto", 0}, {"", 3}, {"auto", 3}} {
		transport := tc.transport
		t.Run(fmt.Sprintf("transport=%s/retries=%d", transport, tc.retries), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, host.Options{Timeout: time.Minute, Retries: tc.retries, RetryBackoff: 100 * time.Millisecond})
			srv := remoteSrv(silentListener(t))
			srv.Transport = transport
			srv.TimeoutMS = 1500
			budget := time.Duration(srv.TimeoutMS) * time.Millisecond
			start := time.Now()
			_, err := h.ListTools(t.Context(), srv, nil)
			took := time.Since(start)
			wantKind(t, err, failure.KindTimeout, "")
			if took > budget+time.Second {
				t.Errorf("failed timeout after %v, want within timeout_ms %v + 1 s", took, budget)
			}
		})
	}
}
