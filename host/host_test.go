package host_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/proc"
	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/testbuild"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// fakeBin is internal/fakemcp, built once for the whole package.
var fakeBin string

func TestMain(m *testing.M) {
	// As colibri-mcp's main does: orphans of hosted servers come here.
	if err := proc.AcquireReaper(); err != nil {
		fmt.Fprintln(os.Stderr, "acquiring the reaper:", err)
		os.Exit(1)
	}
	dir := testbuild.MustDir()
	var err error
	if fakeBin, err = testbuild.Fake(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Built here, before any test runs: the test is the reaper of orphans
	// (above), and a Host closing in another test would take a build's
	// processes for a hosted server's.
	if colibriBin, err = testbuild.Build(dir, "colibri-mcp", testbuild.Module+"/cmd/colibri-mcp", false); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	checkPins := testbuild.IsolatePins(dir)
	code := m.Run()
	if err := checkPins(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// harness is a Host whose every spawned process is recorded, so that a test
// can prove none is left behind.
type harness struct {
	*host.Host
	mu   sync.Mutex
	pids []int
}

func newHarness(t *testing.T, opts host.Options) *harness {
	t.Helper()
	h := &harness{}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.RetryBackoff == 0 {
		opts.RetryBackoff = 10 * time.Millisecond
	}
	if opts.TerminateGrace == 0 {
		opts.TerminateGrace = 300 * time.Millisecond
	}
	if opts.ReapOrphans == nil {
		opts.ReapOrphans = proc.ReapAdopted // TestMain made the test the reaper
	}
	opts.OnSpawn = func(_ string, pid int) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.pids = append(h.pids, pid)
	}
	h.Host = host.New(opts)
	t.Cleanup(func() {
		h.Close()
		h.assertNoProcessLeft(t)
	})
	return h
}

func (h *harness) spawned() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.pids...)
}

// assertNoProcessLeft waits (bounded) until no process remains in the group
// of any process this harness started.
func (h *harness) assertNoProcessLeft(t *testing.T) {
	t.Helper()
	for _, pgid := range h.spawned() {
		waitGroupGone(t, pgid, 10*time.Second)
	}
}

// waitGroupGone waits until no process has process group pgid.
func waitGroupGone(t *testing.T, pgid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := proctable.GroupMembers(pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes %v of group %d still alive %s after the request", left, pgid, within)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fake is a registry entry for the fake server name of internal/fakemcp.
func fake(name string) *registry.Server {
	return &registry.Server{Name: name, Command: fakeBin, Args: []string{name}, Env: map[string]string{}}
}

func wantKind(t *testing.T, err error, kind failure.Kind, phase failure.Phase) *failure.Error {
	t.Helper()
	var e *failure.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want a *failure.Error of kind %s", err, err, kind)
	}
	if e.Kind != kind || (phase != "" && e.Phase != phase) {
		t.Fatalf("kind/phase = %s/%s, want %s/%s; err: %v", e.Kind, e.Phase, kind, phase, err)
	}
	return e
}

func within(t *testing.T, start time.Time, bound time.Duration) {
	t.Helper()
	if d := time.Since(start); d > bound {
		t.Errorf("answered after %s, want within %s", d, bound)
	}
}

func TestListAndCall(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := fake("ok")
	tools, err := h.ListTools(t.Context(), srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "echo") || !strings.Contains(got, "hang") {
		t.Errorf("tools = %s", got)
	}
	res, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "hi"}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "Echo: hi" {
		t.Errorf("result = %q", got)
	}
}

func TestChildEnvironmentIsExplicit(t *testing.T) {
	environ := []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "LC_ALL=C.UTF-8", "LANG=C",
		"AWS_SECRET_ACCESS_KEY=hunter2", "NODE_EXTRA_CA_CERTS=/x.pem", "COLIBRI_TOKEN=abc"}
	h := newHarness(t, host.Options{Environ: func() []string { return environ }})
	srv := fake("ok")
	srv.Env["FROM_REGISTRY"] = "${COLIBRI_TOKEN}-$$"
	res, err := h.CallTool(t.Context(), srv, "env", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(res.Content[0].(*mcp.TextContent).Text, "\n")
	want := []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "LANG=C", "LC_ALL=C.UTF-8", "FROM_REGISTRY=abc-$"}
	if strings.Join(sorted(got), "\n") != strings.Join(sorted(want), "\n") {
		t.Errorf("child environment:\n%s\nwant exactly:\n%s", strings.Join(sorted(got), "\n"), strings.Join(sorted(want), "\n"))
	}
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func TestMissingVariableIsConfig(t *testing.T) {
	h := newHarness(t, host.Options{Environ: func() []string { return nil }})
	srv := fake("ok")
	srv.Env["TOKEN"] = "${NOT_SET_ANYWHERE}"
	_, err := h.ListTools(t.Context(), srv, nil)
	e := wantKind(t, err, failure.KindConfig, failure.PhaseSpawn)
	if !strings.Contains(e.Error(), "NOT_SET_ANYWHERE") || !strings.Contains(e.Error(), "TOKEN") {
		t.Errorf("message %q should name the variable and the key", e.Error())
	}
	if len(h.spawned()) != 0 {
		t.Error("a process was started for a server whose environment cannot be built")
	}
}

// Each hostile behaviour is answered with its kind within its timeout + 1 s,
// and leaves no process behind (checked by the harness's cleanup).
func TestHostileServers(t *testing.T) {
	const timeout = 700 * time.Millisecond
	cases := []struct {
		name    string
		fake    string
		tool    string
		kind    failure.Kind
		phase   failure.Phase
		stderr  string // expected in stderr_tail
		retried bool
	}{
		{name: "hang at initialize", fake: "hang-init", kind: failure.KindTimeout, phase: failure.PhaseInitialize},
		{name: "hang in a call", fake: "ok", tool: "hang", kind: failure.KindTimeout, phase: failure.PhaseCall},
		{name: "exit before initialize", fake: "exit-early", kind: failure.KindHandshake, phase: failure.PhaseInitialize, stderr: "missing API key"},
		{name: "banner on stdout", fake: "banner", kind: failure.KindHandshake, phase: failure.PhaseInitialize},
		{name: "crash mid-call", fake: "ok", tool: "crash", kind: failure.KindCrashed, phase: failure.PhaseCall, stderr: "crashing mid-call"},
		{name: "grandchild ignoring SIGTERM holds stdout", fake: "grandchild", tool: "hang", kind: failure.KindTimeout, phase: failure.PhaseCall, stderr: "grandchild pid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, host.Options{Timeout: timeout})
			srv := fake(tc.fake)
			if tc.phase == failure.PhaseCall {
				// The row is about the call: starting may take what it takes.
				srv.TimeoutMS, srv.CallTimeout = 30_000, timeout.Milliseconds()
			}
			start := time.Now()
			var err error
			if tc.tool == "" {
				_, err = h.ListTools(t.Context(), srv, nil)
			} else {
				_, err = h.CallTool(t.Context(), srv, tc.tool, nil, nil, nil)
			}
			// The phase's timeout, and slack for a start on a loaded
			// machine: far below the 30 s a hang would take without it.
			bound := timeout + 3*time.Second
			if tc.retried {
				bound += 3 * 30 * time.Millisecond // the back-offs (10 ms, 20 ms)
			}
			within(t, start, bound)
			e := wantKind(t, err, tc.kind, tc.phase)
			if tc.stderr != "" && !strings.Contains(e.StderrTail, tc.stderr) {
				t.Errorf("stderr_tail = %q, want it to hold %q", e.StderrTail, tc.stderr)
			}
			if tc.retried && e.Attempts != host.DefaultRetries {
				t.Errorf("attempts = %d, want %d", e.Attempts, host.DefaultRetries)
			}
			if !tc.retried && e.Attempts > 1 {
				t.Errorf("attempts = %d: %s must not be retried", e.Attempts, tc.kind)
			}
			h.Close()
			for _, pid := range h.spawned() {
				waitGroupGone(t, pid, 5*time.Second)
			}
		})
	}
}

// A hosted result holding a number beyond float64 (1e400) is not "crashed"
// with Go type names: readers read it differently (JavaScript: Infinity),
// so strict reading refuses it as protocol, naming where (docs/protocol.md).
func TestHostileUnreadableNumber(t *testing.T) {
	h := newHarness(t, host.Options{})
	_, err := h.CallTool(t.Context(), fake("huge-number"), "any", nil, nil, nil)
	if k := failure.KindOf(err); k != failure.KindProtocol || !strings.Contains(err.Error(), "1e400") || !strings.Contains(err.Error(), "at /result/") {
		t.Errorf("kind %s: %v; want protocol naming 1e400 and where", k, err)
	}
	if msg := err.Error(); strings.Contains(msg, "float64") || strings.Contains(msg, "Go value") || strings.Contains(msg, "mcp.") {
		t.Errorf("the message names Go types: %s", msg)
	}
}

func TestStderrFloodIsBounded(t *testing.T) {
	h := newHarness(t, host.Options{})
	_, err := h.CallTool(t.Context(), fake("stderr-flood"), "crash", nil, nil, nil)
	e := wantKind(t, err, failure.KindCrashed, failure.PhaseCall)
	if len(e.StderrTail) > 4096 {
		t.Errorf("stderr_tail is %d bytes, want at most 4096", len(e.StderrTail))
	}
	if !strings.HasSuffix(e.StderrTail, "panic: crashing mid-call") || !strings.Contains(e.StderrTail, "last words before serving") {
		t.Errorf("stderr_tail does not end with the last lines: ...%q", e.StderrTail[max(0, len(e.StderrTail)-200):])
	}
}

func TestTooLargeKillsAtTheLimit(t *testing.T) {
	h := newHarness(t, host.Options{MaxResultBytes: 1 << 20})
	res, err := h.CallTool(t.Context(), fake("ok"), "big", session.ArgumentsOf(map[string]any{"bytes": 900_000}), nil, nil)
	if err != nil {
		t.Fatalf("a result under the limit failed: %v", err)
	}
	if n := len(res.Content[0].(*mcp.TextContent).Text); n != 900_000 {
		t.Errorf("result of %d bytes, want 900000", n)
	}
	start := time.Now()
	_, err = h.CallTool(t.Context(), fake("ok"), "flood", nil, nil, nil)
	within(t, start, 2*time.Second)
	wantKind(t, err, failure.KindTooLarge, failure.PhaseCall)
}

func TestUnknownToolAndInvalidArguments(t *testing.T) {
	h := newHarness(t, host.Options{})
	_, err := h.CallTool(t.Context(), fake("ok"), "nope", nil, nil, nil)
	wantKind(t, err, failure.KindUnknownTool, failure.PhaseList)

	_, err = h.CallTool(t.Context(), fake("ok"), "echo", session.ArgumentsOf(map[string]any{"message": 42}), nil, nil)
	e := wantKind(t, err, failure.KindInvalidArguments, failure.PhaseCall)
	if !strings.Contains(e.Error(), "arguments/message") {
		t.Errorf("message %q should name the JSON location arguments/message", e.Error())
	}
}

func TestSpawnFailuresArePermanent(t *testing.T) {
	h := newHarness(t, host.Options{})
	dir := t.TempDir()
	notExec := filepath.Join(dir, "server.sh")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644)
	for name, srv := range map[string]*registry.Server{
		"missing absolute": {Name: "a", Command: filepath.Join(dir, "nope")},
		"not on PATH":      {Name: "b", Command: "no-such-mcp-server-anywhere"},
		"not executable":   {Name: "c", Command: notExec},
		"bad cwd":          {Name: "d", Command: os.Args[0], Cwd: filepath.Join(dir, "missing")},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := h.ListTools(t.Context(), srv, nil)
			e := wantKind(t, err, failure.KindSpawn, failure.PhaseSpawn)
			if e.Attempts > 1 {
				t.Errorf("a permanent spawn failure was tried %d times", e.Attempts)
			}
		})
	}
}

func TestIdempotentCallIsRetriedAfterCrash(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := fake("ok")
	srv.Env["CRASH_ONCE_MARKER"] = filepath.Join(t.TempDir(), "crashed")
	res, err := h.CallTool(t.Context(), srv, "crash-idempotent", nil, nil, nil)
	if err != nil {
		t.Fatalf("idempotent tool was not retried after its process died: %v", err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "survived" {
		t.Errorf("result %q", got)
	}
	if n := len(h.spawned()); n != 2 {
		t.Errorf("%d processes started, want 2 (the crash, then the retry)", n)
	}
}

func TestCancelledByCaller(t *testing.T) {
	h := newHarness(t, host.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	started := filepath.Join(t.TempDir(), "started")
	done := make(chan error, 1)
	go func() {
		_, err := h.CallTool(ctx, fake("ok"), "sleep", session.ArgumentsOf(map[string]any{"ms": 60_000, "started": started}), nil, nil)
		done <- err
	}()
	waitFile(t, started, 10*time.Second) // the call runs on the server
	cancel()
	start := time.Now()
	wantKind(t, <-done, failure.KindCancelled, failure.PhaseCall)
	within(t, start, 2*time.Second)
}

// A request whose caller has already given up starts no process: not a
// one-shot one, and not a warm one (a waiter whose shared start was
// cancelled loops back to start the server itself, and must not when its
// own caller is gone too).
func TestCancelledRequestStartsNoProcess(t *testing.T) {
	h := newHarness(t, host.Options{Timeout: 30 * time.Second})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, srv := range []*registry.Server{fake("ok"), persistent("ok")} {
		_, err := h.CallTool(ctx, srv, "echo", session.ArgumentsOf(map[string]any{"message": "hi"}), nil, nil)
		if failure.KindOf(err) != failure.KindCancelled {
			t.Errorf("%s (%s): kind %s (%v), want cancelled", srv.Name, srv.Lifecycle, failure.KindOf(err), err)
		}
	}
	if n := len(h.spawned()); n != 0 {
		t.Errorf("a cancelled request started %d processes", n)
	}
}

// waitFile waits for a file that a fake creates when something happened.
func waitFile(t *testing.T, path string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %s", path, within)
		}
	}
}

func TestOverloaded(t *testing.T) {
	h := newHarness(t, host.Options{MaxProcs: 1})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	started := filepath.Join(t.TempDir(), "started")
	go func() {
		_, err := h.CallTool(ctx, fake("ok"), "sleep", session.ArgumentsOf(map[string]any{"ms": 60_000, "started": started}), nil, nil)
		done <- err
	}()
	waitFile(t, started, 10*time.Second) // the first request holds the only slot
	second := fake("ok")
	second.TimeoutMS = 500 // how long it waits for a slot
	_, err := h.ListTools(t.Context(), second, nil)
	wantKind(t, err, failure.KindOverloaded, failure.PhaseSpawn)
	cancel()
	wantKind(t, <-done, failure.KindCancelled, failure.PhaseCall)
}

// A server that ignores stdin EOF and SIGTERM is killed within the bound.
func TestStubbornServerIsKilled(t *testing.T) {
	h := newHarness(t, host.Options{TerminateGrace: 200 * time.Millisecond})
	start := time.Now()
	if _, err := h.ListTools(t.Context(), fake("stubborn"), nil); err != nil {
		t.Fatal(err)
	}
	h.Close()
	within(t, start, 3*time.Second)
	for _, pid := range h.spawned() {
		if m := proctable.GroupMembers(pid); len(m) != 0 {
			t.Errorf("group %d still has %v after Close", pid, m)
		}
	}
}

// A timed-out call whose request is still being written to a server that
// reads its stdin at a trickle (64 KiB every half second: progress, but
// 8 MiB take a minute) is answered within a bounded time after its timeout,
// not when the last byte has gone.
func TestTimedOutCallToATrickleReaderIsAnswered(t *testing.T) {
	h := newHarness(t, host.Options{Timeout: 30 * time.Second})
	srv := fake("slow-stdin")
	srv.CallTimeout = 1000
	srv.Env = map[string]string{"FAKEMCP_READ": "65536", "FAKEMCP_EVERY_MS": "500"}
	start := time.Now()
	_, err := h.CallTool(t.Context(), srv, "any", session.ArgumentsOf(map[string]any{"payload": strings.Repeat("p", 8<<20)}), nil, nil)
	wantKind(t, err, failure.KindTimeout, failure.PhaseCall)
	// The call's timeout, the 10 s ceiling, and slack for a loaded machine.
	within(t, start, 20*time.Second)
}

// The list cache spares a call the tools/list round trip, but never refuses
// a call on its own: a tool it has not seen sends colibri back to the server.
func TestListCacheNeverRefusesByItself(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := fake("ok")
	marker := filepath.Join(t.TempDir(), "late")
	srv.Env["LATE_TOOL_MARKER"] = marker
	if _, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "x"}), nil, nil); err != nil {
		t.Fatal(err) // lists (no "late"), and caches that list
	}
	os.WriteFile(marker, nil, 0o600) // the next process of the same server has "late"
	res, err := h.CallTool(t.Context(), srv, "late", nil, nil, nil)
	if err != nil {
		t.Fatalf("a tool missing from the cached list was refused: %v", err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "late but here" {
		t.Errorf("result %q", got)
	}
	os.Remove(marker)
	_, err = h.CallTool(t.Context(), srv, "late", nil, nil, nil)
	wantKind(t, err, failure.KindUnknownTool, failure.PhaseList)
}

// peakRSS is this process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// 40 lists of a server whose version changes at every start (each a new
// list-cache key) keep at most two of its lists: the peak RSS grows by a
// bounded amount (it grew by 121 MB, the cache filling its 64 MiB of counted
// bytes, the decoded lists and the collector's slack several times that).
func TestHostileChangingVersionRSS(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := fake("changing-version")
	srv.Env = map[string]string{"FAKEMCP_TOOLS_N": "1000"} // ~1 MB a list
	for range 2 {
		if _, err := h.ListTools(t.Context(), srv, nil); err != nil {
			t.Fatal(err)
		}
	}
	before := peakRSS(t)
	for range 40 {
		if _, err := h.ListTools(t.Context(), srv, nil); err != nil {
			t.Fatal(err)
		}
	}
	grew := peakRSS(t) - before
	t.Logf("peak RSS grew by %d MB over 40 lists of ~1 MB", grew>>20)
	if grew > 64<<20 {
		t.Errorf("peak RSS grew by %d MB over 40 lists of a changing version", grew>>20)
	}
}

// After hostile and normal requests, and Close, colibri's goroutines are
// back where they started: nothing waits forever on a dead server.
func TestNoGoroutineGrowth(t *testing.T) {
	baseline := runtime.NumGoroutine()
	h := host.New(host.Options{Timeout: 10 * time.Second, RetryBackoff: time.Millisecond, TerminateGrace: 100 * time.Millisecond, MaxResultBytes: 1 << 20})
	for _, c := range []struct {
		fake, tool string
		kind       failure.Kind // "" for success
	}{
		{"ok", "echo", ""}, {"ok", "hang", failure.KindTimeout}, {"ok", "crash", failure.KindCrashed},
		{"hang-init", "", failure.KindTimeout}, {"exit-early", "", failure.KindHandshake},
		{"banner", "", failure.KindHandshake}, {"grandchild", "hang", failure.KindTimeout},
		{"stubborn", "echo", ""}, {"ok", "flood", failure.KindTooLarge},
	} {
		var err error
		srv := fake(c.fake)
		srv.CallTimeout = 500 // the hanging rows end here; starting may take its time
		if c.fake == "hang-init" {
			srv.TimeoutMS = 500
		}
		if c.tool == "" {
			_, err = h.ListTools(t.Context(), srv, nil)
		} else {
			var args map[string]any
			if c.tool == "echo" {
				args = map[string]any{"message": "x"}
			}
			_, err = h.CallTool(t.Context(), srv, c.tool, session.ArgumentsOf(args), nil, nil)
		}
		if c.kind == "" && err != nil {
			t.Errorf("%s %s: %v", c.fake, c.tool, err)
		} else if c.kind != "" && failure.KindOf(err) != c.kind {
			t.Errorf("%s %s: kind %s (%v), want %s", c.fake, c.tool, failure.KindOf(err), err, c.kind)
		}
	}
	h.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// unknown_tool names the closest tool and those the server has, from the
// list the call itself read: one process, not a second one for the hint.
func TestUnknownToolNamesTheTools(t *testing.T) {
	h := newHarness(t, host.Options{})
	_, err := h.CallTool(t.Context(), fake("ok"), "ecko", nil, nil, nil)
	e := wantKind(t, err, failure.KindUnknownTool, failure.PhaseList)
	if !strings.Contains(e.Error(), `did you mean "echo"? its tools: any, big, count, crash, crash-idempotent, cwd, echo, env, flood, grow, hang, mirror, pid`) {
		t.Errorf("message %q should suggest echo and name the tools", e.Error())
	}
	if n := len(h.spawned()); n != 1 {
		t.Errorf("%d processes started for one unknown tool, want 1", n)
	}
}

func TestUnknownToolBoundsTheList(t *testing.T) {
	var have []*mcp.Tool
	for i := range 45 {
		have = append(have, &mcp.Tool{Name: fmt.Sprintf("t%02d", i)})
	}
	msg := host.UnknownTool("s", "zzz", have).Error()
	if !strings.Contains(msg, "t29, and 15 more)") || strings.Contains(msg, "t30") || strings.Contains(msg, "did you mean") {
		t.Errorf("message %q: want 30 names, the count of the rest, no suggestion", msg)
	}
	if msg := host.UnknownTool("s", "x", nil).Error(); !strings.Contains(msg, "the server lists no tools") {
		t.Errorf("message %q", msg)
	}
	// A hosted server's names may be of any length: each is cut, so that
	// the hint stays small (30 names of at most 128 characters).
	have = nil
	for i := range 45 {
		have = append(have, &mcp.Tool{Name: fmt.Sprintf("%02d", i) + strings.Repeat("n", 100_000)})
	}
	msg = host.UnknownTool("s", strings.Repeat("n", 1<<20), have).Error()
	if hint := msg[strings.Index(msg, "(its tools: "):]; len(hint) > 30*(128+4)+100 || !strings.Contains(hint, "29"+strings.Repeat("n", 125)+"…, and 15 more)") {
		t.Errorf("a hint of %d bytes: %.300s…", len(hint), hint)
	}
}

// WatchLists hears of every list read from a server, whatever read it, and
// of a warm server's notifications/tools/list_changed (a nil list).
func TestWatchLists(t *testing.T) {
	h := newHarness(t, host.Options{})
	type heard struct {
		server string
		tools  []string // nil: stale
	}
	ch := make(chan heard, 16)
	h.WatchLists(func(srv *registry.Server, tools []*mcp.Tool) {
		var names []string
		for _, tl := range tools {
			names = append(names, tl.Name)
		}
		if tools != nil && names == nil {
			names = []string{}
		}
		ch <- heard{srv.Name, names}
	})
	next := func() heard {
		t.Helper()
		select {
		case got := <-ch:
			return got
		case <-time.After(10 * time.Second):
			t.Fatal("nothing heard")
			return heard{}
		}
	}
	if _, err := h.ListTools(t.Context(), fake("ok"), nil); err != nil {
		t.Fatal(err)
	}
	if got := next(); got.server != "ok" || !slices.Contains(got.tools, "echo") {
		t.Errorf("after ListTools: %+v", got)
	}

	srv := persistent("ok")
	if _, err := h.CallTool(t.Context(), srv, "grow", session.ArgumentsOf(map[string]any{"name": "grown"}), nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := next(); got.server != srv.Name || slices.Contains(got.tools, "grown") {
		t.Errorf("the call's own list: %+v", got)
	}
	if got := next(); got.server != srv.Name || got.tools != nil {
		t.Errorf("after the warm server's list_changed: %+v, want a nil (stale) list", got)
	}
	if _, err := h.ListTools(t.Context(), srv, nil); err != nil {
		t.Fatal(err)
	}
	if got := next(); !slices.Contains(got.tools, "grown") {
		t.Errorf("the fresh list: %+v", got)
	}
}

// The gate is asked before anything starts, on the list the host holds
// (BeforeStart), and again on the list the call is checked against
// (BeforeSend): a tool the policy or the pins refuse on the held list
// starts no process; one refused only on the fresh list is refused before
// tools/call is sent.
func TestGateAskedBeforeAnythingStarts(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := fake("ok")
	if _, err := h.ListTools(t.Context(), srv, nil); err != nil { // the host now holds its list
		t.Fatal(err)
	}
	listed := len(h.spawned())
	g := &refusingGate{server: srv.Name}
	g.onHeld = true
	_, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "hi"}), nil, g)
	if failure.KindOf(err) != failure.KindDenied || len(h.spawned()) != listed || !slices.Equal(g.asked, []string{"start"}) {
		t.Fatalf("refused on the held list: kind %q, %d processes started, asked %v; want denied, none started, asked once before the start",
			failure.KindOf(err), len(h.spawned())-listed, g.asked)
	}
	g.asked, g.onHeld = nil, false
	_, err = h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "hi"}), nil, g)
	if failure.KindOf(err) != failure.KindDenied || !slices.Equal(g.asked, []string{"start", "send"}) {
		t.Fatalf("refused on the fresh list: kind %q, asked %v; want denied, asked before the start then before the send", failure.KindOf(err), g.asked)
	}
}

// refusingGate records where it is asked, and refuses before the start
// (onHeld) or before the send.
type refusingGate struct {
	server string
	onHeld bool
	asked  []string
}

func (g *refusingGate) refuse(tool *mcp.Tool) error {
	return &failure.Error{Kind: failure.KindDenied, Server: g.server, Tool: tool.Name, Err: errors.New("no")}
}

func (g *refusingGate) BeforeStart(tool *mcp.Tool, _ []*mcp.Tool) error {
	g.asked = append(g.asked, "start")
	if g.onHeld {
		return g.refuse(tool)
	}
	return nil
}

func (g *refusingGate) BeforeSend(tool *mcp.Tool, _ []*mcp.Tool) error {
	g.asked = append(g.asked, "send")
	if !g.onHeld {
		return g.refuse(tool)
	}
	return nil
}

func (g *refusingGate) Nameable(list []*mcp.Tool) []*mcp.Tool { return list }

// A server npx starts that does not answer initialize in time is told
// apart from a hung server: the hint says npx may be downloading the
// package, and how to install it in advance.
func TestRunnerTimeoutHint(t *testing.T) {
	dir := t.TempDir()
	npx := filepath.Join(dir, "npx")
	if err := os.Symlink(fakeBin, npx); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, host.Options{Timeout: 300 * time.Millisecond})
	srv := fake("hang-init")
	srv.Command = npx
	_, err := h.ListTools(t.Context(), srv, nil)
	e := wantKind(t, err, failure.KindTimeout, failure.PhaseInitialize)
	if !strings.Contains(e.Hint, "npx may be downloading the package") || !strings.Contains(e.Hint, "raise timeout_ms") {
		t.Errorf("hint %q: want npx's download named before raising timeout_ms", e.Hint)
	}
}
