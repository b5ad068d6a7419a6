package host_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// daemonShapes are the shapes of internal/fakemcp's "daemon" (issue 36,
// G1), with whether the daemon leads its session and its group.
var daemonShapes = []struct {
	name                  string
	leadsSession, leadsPG bool
}{
	{"setsid", false, false}, // the classic daemon: leads nothing
	{"setpgid", false, false},
	{"double-fork", false, false},
	{"leader", true, true},
}

// daemonOf reads which processes the fake's middle and daemon were.
func daemonOf(t *testing.T, report string) (server, middle, daemon int) {
	t.Helper()
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("the fake reported no daemon: %v", err)
	}
	if _, err := fmt.Sscanf(string(b), "%d %d %d", &server, &middle, &daemon); err != nil {
		t.Fatalf("the fake's report %q: %v", b, err)
	}
	return server, middle, daemon
}

// checkShape fails the test when the daemon is not of the shape it claims
// (a daemon that leads its group is the easy case: kill(-pid) reaches it).
func checkShape(t *testing.T, daemon int, leadsSession, leadsPG bool) {
	t.Helper()
	sid, err := unix.Getsid(daemon)
	if err != nil {
		t.Fatalf("the daemon %d is gone before teardown: %v", daemon, err)
	}
	pgid, err := syscall.Getpgid(daemon)
	if err != nil {
		t.Fatalf("the daemon %d is gone before teardown: %v", daemon, err)
	}
	if (sid == daemon) != leadsSession || (pgid == daemon) != leadsPG {
		t.Fatalf("the daemon %d has session %d and group %d: not the shape the test claims", daemon, sid, pgid)
	}
}

// goneAt waits (bounded) until pid has ended and returns when it saw it.
func goneAt(t *testing.T, pid int, within time.Duration) time.Time {
	t.Helper()
	for deadline := time.Now().Add(within); proctable.Alive(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive %v on", pid, within)
		}
	}
	return time.Now()
}

// A daemon of every shape a hosted server's process can leave (the classic
// setsid-fork-exit that leads neither session nor group, setpgid, a plain
// double fork, one that leads its session), each ignoring SIGHUP and
// SIGTERM, is gone within a second of its server: per request, when the
// teardown after the answer ends the server; for a warm server, when Close
// ends it. Without teardown killing the orphan itself (kill(-pid) alone is
// ESRCH for the first two), the daemon lives on and each teardown waited
// 2 s a round for it.
func TestDaemonOfEveryShapeEndsWithItsServer(t *testing.T) {
	for _, shape := range daemonShapes {
		for _, warm := range []bool{false, true} {
			t.Run(shape.name+map[bool]string{true: "/persistent", false: "/per-request"}[warm], func(t *testing.T) {
				h := newHarness(t, host.Options{})
				srv := fake("daemon")
				if warm {
					srv = persistent("daemon")
				}
				report := filepath.Join(t.TempDir(), "report")
				srv.Env["FAKEMCP_DAEMON"] = shape.name
				srv.Env["FAKEMCP_REPORT"] = report
				if _, err := h.ListTools(t.Context(), srv, nil); err != nil {
					t.Fatal(err)
				}
				server, _, daemon := daemonOf(t, report)
				t.Cleanup(func() { syscall.Kill(daemon, syscall.SIGKILL) })
				if warm {
					checkShape(t, daemon, shape.leadsSession, shape.leadsPG)
					h.Close()
				}
				serverGone := goneAt(t, server, 10*time.Second)
				daemonGone := goneAt(t, daemon, 10*time.Second)
				if d := daemonGone.Sub(serverGone); d > time.Second {
					t.Errorf("the daemon outlived its server by %v", d)
				}
			})
		}
	}
}
