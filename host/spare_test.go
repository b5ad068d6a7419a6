package host_test

//lint:file-ignore SA1019 the tests drive the sampling, roots and logging that colibri relays on purpose.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// spareServer is fake name with "spare": n, witnessing early writes in dir.
func spareServer(t *testing.T, name string, n int) (*registry.Server, string) {
	t.Helper()
	dir := t.TempDir()
	srv := fake(name)
	srv.Spare = n
	srv.Env["FAKEMCP_MARKER"] = filepath.Join(dir, "marker")
	srv.Env["FAKEMCP_EARLY"] = dir
	return srv, dir
}

func regOf(srvs ...*registry.Server) *registry.Registry {
	reg := &registry.Registry{Servers: map[string]*registry.Server{}}
	for _, s := range srvs {
		reg.Servers[s.Name] = s
	}
	return reg
}

func readyIs(h *harness, server string, n int) func() bool {
	return func() bool { return h.Spares(server).Ready == n }
}

// A spare is started ahead, nothing is written to it before a request takes
// it, it serves that one request and is torn down; a new one replaces it.
// No pid ever serves two requests.
func TestSpareIsStartedAheadAndServesOneRequest(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv, dir := spareServer(t, "spare-witness", 1)
	h.Retain(regOf(srv))
	testwait.Eventually(t, "no spare ready", readyIs(h, srv.Name, 1))
	spare := h.spawned()[0]
	if err := os.WriteFile(srv.Env["FAKEMCP_MARKER"], nil, 0o644); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for i := range 3 {
		testwait.Eventually(t, "no spare ready again", readyIs(h, srv.Name, 1))
		before := len(h.spawned())
		pid := callText(t, h, srv, "pid", nil)
		if i == 0 && pid != strconv.Itoa(spare) {
			t.Fatalf("the call ran on pid %s, want the spare %d", pid, spare)
		}
		if served[pid] {
			t.Fatalf("pid %s served two requests", pid)
		}
		served[pid] = true
		if n := len(h.spawned()); n != before && i == 0 {
			// The request took the spare: it started no process of its own
			// before answering (the replacement may have started since).
			if n > before+1 {
				t.Errorf("%d processes started during a call that took a spare", n-before)
			}
		}
		p, _ := strconv.Atoi(pid)
		testwait.Eventually(t, "the used spare "+pid+" is still alive", func() bool { return !proctable.Alive(p) })
	}
	if st := h.Spares(srv.Name); st.Hits != 3 || st.Misses != 0 {
		t.Errorf("hits/misses = %d/%d, want 3/0", st.Hits, st.Misses)
	}
	early, _ := filepath.Glob(filepath.Join(dir, "[0-9]*"))
	for _, f := range early {
		b, _ := os.ReadFile(f)
		t.Errorf("process %s was written to before a request took it: %q", filepath.Base(f), b)
	}
}

// A request takes a spare and initializes it with exactly its own caller's
// capabilities: sampling for a caller that samples, none for one that does
// not.
func TestSpareGetsTheCallersCapabilities(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv, _ := spareServer(t, "spare-witness", 1)
	h.Retain(regOf(srv))
	sampler := &session.Caller{CreateMessage: func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		return nil, nil
	}}
	for _, c := range []struct {
		caller *session.Caller
		want   string
	}{{sampler, "sampling"}, {nil, ""}, {&session.Caller{}, ""}} {
		testwait.Eventually(t, "no spare ready", readyIs(h, srv.Name, 1))
		hits := h.Spares(srv.Name).Hits
		res, err := h.CallTool(t.Context(), srv, "caps", nil, c.caller, nil)
		if got := text(t, res, err); got != c.want {
			t.Errorf("capabilities offered = %q, want %q", got, c.want)
		}
		if h.Spares(srv.Name).Hits != hits+1 {
			t.Errorf("the request did not take the spare")
		}
	}
}

// A spare that dies at start is replaced with a growing back-off, and after
// CircuitThreshold deaths in a row no more start (the circuit is open): a
// request fails fast, unavailable, with the server's last words.
func TestSpareThatDiesAtStartOpensTheCircuit(t *testing.T) {
	h := newHarness(t, host.Options{CircuitThreshold: 3, Cooldown: time.Hour, RetryBackoff: 5 * time.Millisecond})
	srv, _ := spareServer(t, "spare-dies", 2)
	h.Retain(regOf(srv))
	// Once the circuit is open, no spare starts: only a start already under
	// way then (the other spare's) may still return. The count is taken
	// when none is under way, not the moment the circuit opens: that start
	// reports its process a moment later.
	testwait.Eventually(t, "the circuit did not open", func() bool {
		st := h.Spares(srv.Name)
		return st.Open != nil && st.Starting == 0
	})
	started := len(h.spawned())
	// Two spares are wanted: the deaths that open the circuit, and at most
	// the other spare's start that was under way.
	if started < 3 || started > 4 {
		t.Errorf("%d spares started before the circuit opened, want 3 or 4", started)
	}
	_, err := h.CallTool(t.Context(), srv, "pid", nil, nil, nil)
	e := wantKind(t, err, failure.KindUnavailable, "")
	if !strings.Contains(e.StderrTail, "SPARE_API_KEY is not set") {
		t.Errorf("stderr_tail = %q, want the server's last words", e.StderrTail)
	}
	st := h.Spares(srv.Name)
	if st.Open == nil || !strings.Contains(st.Open.StderrTail, "SPARE_API_KEY") {
		t.Errorf("Spares().Open = %v, want unavailable with the stderr tail", st.Open)
	}
	if n := len(h.spawned()); n != started {
		t.Errorf("%d processes started while the circuit was open, want none", n-started)
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
	testwait.Eventually(t, "the spares' circuit did not open", func() bool { return h.Spares(srv.Name).Open != nil })
	started := len(h.spawned())
	if _, err := h.CallTool(t.Context(), srv, "pid", nil, nil, nil); err != nil {
		t.Errorf("a request to a server whose spares left on their own: %v", err)
	}
	if n := len(h.spawned()) - started; n != 1 {
		t.Errorf("%d processes started for the request, want its own one", n)
	}
}

// Spares stop after idle_timeout_ms without requests, and start again on
// the next request (which itself starts its own process: a miss). The test
// follows the spawns, not the ready count: a spare is ready only until the
// idle timer (300 ms from the registry read, or the request) stops it, a
// window a loaded machine shortens to nothing.
func TestSparesStopWhenIdle(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv, _ := spareServer(t, "spare-witness", 1)
	srv.IdleMS = 300
	h.Retain(regOf(srv))
	testwait.Eventually(t, "no spare started", func() bool { return len(h.spawned()) == 1 })
	first := h.spawned()[0]
	testwait.Eventually(t, "the idle spare was not stopped", func() bool {
		return h.Spares(srv.Name).Ready == 0 && !proctable.Alive(first)
	})
	h.Retain(regOf(srv)) // a registry read is no request: they stay stopped
	if n := len(h.spawned()); n != 1 {
		t.Fatalf("%d processes started while idle, want the first one only", n)
	}
	callText(t, h, srv, "pid", nil)
	if st := h.Spares(srv.Name); st.Misses != 1 {
		t.Errorf("misses = %d, want 1", st.Misses)
	}
	// The request's own process, then the spare started again.
	testwait.Eventually(t, "the spare did not start again after a request", func() bool { return len(h.spawned()) >= 3 })
}

// An edited entry's spares are discarded and the new entry's start; a
// removed entry's are discarded. A changed ${NAME} reaches the next spare.
func TestSparesFollowTheRegistry(t *testing.T) {
	vars := struct {
		sync.Mutex
		v string
	}{v: "one"}
	h := newHarness(t, host.Options{Environ: func() []string {
		vars.Lock()
		defer vars.Unlock()
		return []string{"PATH=" + os.Getenv("PATH"), "SPARE_SOURCE=" + vars.v}
	}})
	srv, _ := spareServer(t, "spare-witness", 1)
	srv.Env["SPARE_VAR"] = "${SPARE_SOURCE}"
	h.Retain(regOf(srv))
	testwait.Eventually(t, "no spare ready", readyIs(h, srv.Name, 1))
	vars.Lock()
	vars.v = "two"
	vars.Unlock()
	if got := callText(t, h, srv, "var", nil); got != "one" {
		t.Errorf("the first spare has SPARE_VAR=%q, want one (expanded when it started)", got)
	}
	testwait.Eventually(t, "no spare ready", readyIs(h, srv.Name, 1))
	if got := callText(t, h, srv, "var", nil); got != "two" {
		t.Errorf("the next spare has SPARE_VAR=%q, want two (a changed variable is picked up)", got)
	}

	testwait.Eventually(t, "no spare ready", readyIs(h, srv.Name, 1))
	old := h.spawned()[len(h.spawned())-1]
	edited := *srv
	edited.Env = map[string]string{"FAKEMCP_MARKER": srv.Env["FAKEMCP_MARKER"], "FAKEMCP_EARLY": srv.Env["FAKEMCP_EARLY"], "SPARE_VAR": "edited"}
	h.Retain(regOf(&edited))
	testwait.Eventually(t, "the edited entry's old spare is alive", func() bool { return !proctable.Alive(old) })
	testwait.Eventually(t, "the edited entry has no spare", readyIs(h, srv.Name, 1))
	if got := callText(t, h, &edited, "var", nil); got != "edited" {
		t.Errorf("after the edit SPARE_VAR=%q, want edited", got)
	}

	testwait.Eventually(t, "no spare ready", readyIs(h, srv.Name, 1))
	last := h.spawned()[len(h.spawned())-1]
	h.Retain(regOf())
	testwait.Eventually(t, "the removed entry's spare is alive", func() bool { return !proctable.Alive(last) })
	if n := h.Spares(srv.Name).Ready; n != 0 {
		t.Errorf("a removed entry has %d spares", n)
	}
}

// Host.Close with spares up (and starting) leaves no process behind.
func TestCloseLeavesNoSpare(t *testing.T) {
	h := newHarness(t, host.Options{})
	a, _ := spareServer(t, "spare-witness", 3)
	b := fake("ok")
	b.Spare = 2
	h.Retain(regOf(a, b))
	testwait.Eventually(t, "spares not ready", func() bool {
		return h.Spares(a.Name).Ready == 3 && h.Spares(b.Name).Ready == 2
	})
	pids := h.spawned()
	h.Close()
	for _, pid := range pids {
		if proctable.Alive(pid) {
			t.Errorf("spare %d outlived Host.Close", pid)
		}
	}
	if n := h.Processes(); n != 0 {
		t.Errorf("%d process slots still taken after Close", n)
	}
}

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
			testwait.Eventually(t, "no spare ready", readyIs(h, srv.Name, 1))
			testwait.Eventually(t, "the daemon not started", func() bool { e, _ := os.ReadDir(pids); return len(e) == 3 })
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

// Spares count toward MaxProcs, and never starve requests: with every slot
// held by an idle spare, requests to another server take the spares' slots
// and all succeed; no more processes than MaxProcs are ever alive.
func TestSparesGiveTheirSlotsToRequests(t *testing.T) {
	const maxProcs = 3
	var mu sync.Mutex
	alive, peak := 0, 0
	h := newHarness(t, host.Options{MaxProcs: maxProcs, Timeout: 5 * time.Second})
	a, _ := spareServer(t, "spare-witness", maxProcs)
	h.Retain(regOf(a))
	testwait.Eventually(t, "spares not ready", readyIs(h, a.Name, maxProcs))
	if n := h.Processes(); n != maxProcs {
		t.Fatalf("%d slots taken by %d spares, want %d: spares count toward MaxProcs", n, maxProcs, maxProcs)
	}
	b := fake("ok")
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	stop := make(chan struct{})
	go func() { // sample the slots while the requests run
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			alive = h.Processes()
			peak = max(peak, alive)
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()
	for range 12 {
		wg.Go(func() {
			res, err := h.CallTool(t.Context(), b, "pid", nil, nil, nil)
			if err == nil && res.IsError {
				err = fmt.Errorf("isError: %v", res.Content)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(stop)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a request failed while spares held the slots: %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if peak > maxProcs {
		t.Errorf("%d process slots taken at once, more than MaxProcs %d", peak, maxProcs)
	}
}

// A spare entry that cannot start (an unset ${NAME}) starts no process,
// opens no circuit, and each request says why: config, not unavailable.
func TestSpareThatCannotStartSaysWhy(t *testing.T) {
	h := newHarness(t, host.Options{CircuitThreshold: 1, Environ: func() []string { return []string{"PATH=" + os.Getenv("PATH")} }})
	srv, _ := spareServer(t, "spare-witness", 2)
	srv.Env["SPARE_VAR"] = "${SPARE_UNSET_VARIABLE}"
	h.Retain(regOf(srv))
	for range 3 {
		_, err := h.CallTool(t.Context(), srv, "pid", nil, nil, nil)
		wantKind(t, err, failure.KindConfig, "")
	}
	if n := len(h.spawned()); n != 0 {
		t.Errorf("%d processes started for an entry that cannot start", n)
	}
	if st := h.Spares(srv.Name); st.Open != nil || st.Ready != 0 {
		t.Errorf("spares %+v, want none and no circuit", st)
	}
}
