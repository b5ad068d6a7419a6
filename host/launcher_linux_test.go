package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/proc"
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
)

// A launcher (npx, uv run, a wrapper script) whose real server is a child
// on its stdio exits while a call waits in the pipe, unread, the child busy
// with an earlier one. The launcher being reaped does not make the queued
// call unsent: the child may read and run it afterwards. A call is made
// again on a fresh process only once no process is left that could read it
// (the rest of the group killed first); one that left the group (setsid)
// keeps it unknown, and the call fails as crashed rather than run twice.
func TestCallReadByALauncherChildIsNotMadeAgain(t *testing.T) {
	for _, c := range []struct {
		name    string
		setsid  string
		after   string // how long the child stalls once its launcher is gone
		reap    bool
		retried bool // the queued call is made again, and answered
	}{
		{name: "in the group, reading on", after: "0", reap: true},
		{name: "in the group, stalled on", after: "never", reap: true, retried: true},
		{name: "out of the group", setsid: "1", after: "200"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := host.Options{}
			if !c.reap {
				// The orphan must live to read the call: it is reaped
				// here once it has.
				opts.ReapOrphans = func() int { return 0 }
				t.Cleanup(func() { proc.ReapAdopted() })
			}
			h := newHarness(t, opts)
			dir := t.TempDir()
			pids := filepath.Join(dir, "pids")
			if err := os.Mkdir(pids, 0o755); err != nil {
				t.Fatal(err)
			}
			effects, stalled := filepath.Join(dir, "effects"), filepath.Join(dir, "stalled")
			srv := persistent("launcher")
			srv.Env = map[string]string{"FAKEMCP_SETSID": c.setsid, "FAKEMCP_AFTER_MS": c.after,
				"FAKEMCP_STALLED": stalled, "FAKEMCP_EFFECTS": effects, "FAKEMCP_PIDS": pids}

			stallDone := make(chan error, 1)
			go func() {
				_, err := h.CallTool(t.Context(), srv, "stall", nil, nil, nil)
				stallDone <- err
			}()
			waitFile(t, stalled, testwait.Bound)
			first := recordedPids(t, pids, 2) // the launcher and its child
			// The launcher exits once this call is in the pipe.
			res, err := h.CallTool(t.Context(), srv, "effect", nil, nil, nil)
			<-stallDone
			waitDead(t, first, testwait.Bound) // killed, or done with its stdin

			b, _ := os.ReadFile(effects)
			ran := strings.Fields(string(b))
			switch {
			case len(ran) > 1:
				t.Fatalf("the effect tool ran %d times (pids %v), want once", len(ran), ran)
			case c.retried && (err != nil || res.IsError || len(ran) != 1):
				t.Fatalf("the call no process read: %v %v, ran %d times; want it made again on a fresh process", err, res, len(ran))
			case err != nil && failure.KindOf(err) != failure.KindCrashed:
				t.Fatalf("the call: kind %q (%v), want crashed", failure.KindOf(err), err)
			case err == nil && !res.IsError && len(ran) != 1:
				t.Fatalf("the call was answered, but the effect ran %d times", len(ran))
			}
		})
	}
}
