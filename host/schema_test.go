package host_test

import (
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
)

// cpuTime is this process's user+system CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A hosted tool whose inputSchema would take the compiler minutes (a 1.3 MB
// anyOf: 280 s of CPU before; 400 levels of nesting) is not compiled: the
// call goes ahead unchecked, is answered before its timeout, costs colibri a
// bounded amount of CPU, and the schema is logged once.
func TestHostileInputSchema(t *testing.T) {
	// The phase timeout is not what this test checks (the CPU bound below
	// is): it only must not run out on a loaded machine, where -race's
	// decode of the 1.3 MB list took over 5 s of wall time.
	const timeout = 2 * time.Minute
	for _, shape := range []string{"wide", "deep"} {
		t.Run(shape, func(t *testing.T) {
			logs := &syncbuf.Buffer{}
			h := newHarness(t, host.Options{Timeout: timeout,
				Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
			srv := fake("huge-schema")
			srv.Env["FAKEMCP_SCHEMA"] = shape
			cpu := cpuTime(t)
			for i := range 2 {
				start := time.Now()
				res, err := h.CallTool(t.Context(), srv, "any", session.ArgumentsOf(map[string]any{"x": 1}), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Content[0].(*mcp.TextContent).Text; got != "called" {
					t.Fatalf("result %q", got)
				}
				// No wall-clock bound: a loaded machine stretches it. The
				// result above shows no phase ran out of its timeout, and the
				// CPU bound below shows the compile was cut short.
				t.Logf("call %d answered in %v", i+1, time.Since(start))
			}
			spent := cpuTime(t) - cpu
			t.Logf("two calls: %v of colibri's CPU", spent)
			// Measured here: 0.15-0.3 s without -race, ~2 s with it, most of
			// it the go-sdk decoding the 1.3 MB list; 280 s before the bound.
			if spent > 4*time.Second {
				t.Errorf("colibri spent %v of CPU on two calls", spent)
			}
			if n := strings.Count(logs.String(), "input schema cannot be checked"); n != 1 {
				t.Errorf("logged %d times, want once:\n%s", n, logs.String())
			}
		})
	}
}
