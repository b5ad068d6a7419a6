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
