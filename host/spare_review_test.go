package host_test

import (
	"os"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/host"
)

// A spare that double-forks a daemon while it waits (its middle child
// exits, orphaning the daemon in a session of its own) leaves nothing
// behind when its entry is removed, nor at Host.Close.
func TestSpareDaemonsEndWithTheSpare(t *testing.T) {
	for _, how := range []string{"entry removed", "Host.Close"} {
		t.Run(how, func(t *testing.T) {
			h := newHarness(t, host.Options{})
			srv := fake("double-fork")
			srv.Spare = 1
			pids := t.TempDir()
			srv.Env["FAKEMCP_PIDS"] = pids
			h.Retain(regOf(srv))
			waitUntil(t, "no spare ready", readyIs(h, srv.Name, 1))
			waitUntil(t, "the daemon not started", func() bool { e, _ := os.ReadDir(pids); return len(e) == 3 })
			escaped := recordedPids(t, pids, 3)
			if how == "entry removed" {
				h.Retain(regOf())
			} else {
				h.Close()
			}
			waitDead(t, escaped, 5*time.Second)
		})
	}
}

// A server whose spares leave on their own while they wait (status 0: an
// idle watchdog that exits when no client writes within a while) runs
// fine per request. Its spares stop respawning (the circuit), but its
// requests are served, each by a process of its own, as without spares:
// "spare" must never make a working server unavailable.
func TestSparesThatLeaveOnTheirOwnFailNoRequest(t *testing.T) {
	h := newHarness(t, host.Options{CircuitThreshold: 3, Cooldown: time.Hour, RetryBackoff: 5 * time.Millisecond, Timeout: 10 * time.Second})
	srv := fake("spare-impatient")
	srv.Env["IMPATIENT_MS"] = "200"
	srv.Spare = 1
	h.Retain(regOf(srv))
	waitUntil(t, "the spares' circuit did not open", func() bool { return h.Spares(srv.Name).Open != nil })
	started := len(h.spawned())
	if _, err := h.CallTool(t.Context(), srv, "pid", nil, nil); err != nil {
		t.Errorf("a request to a server whose spares left on their own: %v", err)
	}
	if n := len(h.spawned()) - started; n != 1 {
		t.Errorf("%d processes started for the request, want its own one", n)
	}
}
