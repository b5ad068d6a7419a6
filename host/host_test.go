package host_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/procs"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(fakeEnv); name != "" {
		f, ok := fakes[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "no fake server %q\n", name)
			os.Exit(1)
		}
		f()
		os.Exit(0)
	}
	os.Exit(m.Run())
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

// waitGroupGone scans /proc until no process has process group pgid.
func waitGroupGone(t *testing.T, pgid int, within time.Duration) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	deadline := time.Now().Add(within)
	for {
		left := procs.GroupMembers(pgid)
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

func fake(name string) *registry.Server {
	return &registry.Server{Name: name, Command: os.Args[0], Env: map[string]string{fakeEnv: name}}
}

func wantKind(t *testing.T, err error, kind host.Kind, phase host.Phase) *host.Error {
	t.Helper()
	var e *host.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want a *host.Error of kind %s", err, err, kind)
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
	res, err := h.CallTool(t.Context(), srv, "echo", map[string]any{"message": "hi"}, nil)
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
	res, err := h.CallTool(t.Context(), srv, "env", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(res.Content[0].(*mcp.TextContent).Text, "\n")
	want := []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "LANG=C", "LC_ALL=C.UTF-8", "COLIBRI_FAKE_SERVER=ok", "FROM_REGISTRY=abc-$"}
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
	e := wantKind(t, err, host.KindConfig, host.PhaseSpawn)
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
		kind    host.Kind
		phase   host.Phase
		stderr  string // expected in stderr_tail
		retried bool
	}{
		{name: "hang at initialize", fake: "hang-init", kind: host.KindTimeout, phase: host.PhaseInitialize},
		{name: "hang in a call", fake: "ok", tool: "hang", kind: host.KindTimeout, phase: host.PhaseCall},
		{name: "exit before initialize", fake: "exit-early", kind: host.KindHandshake, phase: host.PhaseInitialize, stderr: "missing API key"}, // exit status 1: permanent
		{name: "banner on stdout", fake: "banner", kind: host.KindHandshake, phase: host.PhaseInitialize},
		{name: "crash mid-call", fake: "ok", tool: "crash", kind: host.KindCrashed, phase: host.PhaseCall, stderr: "crashing mid-call"},
		{name: "grandchild ignoring SIGTERM holds stdout", fake: "grandchild", tool: "hang", kind: host.KindTimeout, phase: host.PhaseCall, stderr: "grandchild pid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, host.Options{Timeout: timeout})
			start := time.Now()
			var err error
			if tc.tool == "" {
				_, err = h.ListTools(t.Context(), fake(tc.fake), nil)
			} else {
				_, err = h.CallTool(t.Context(), fake(tc.fake), tc.tool, nil, nil)
			}
			bound := timeout + time.Second
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

func TestStderrFloodIsBounded(t *testing.T) {
	h := newHarness(t, host.Options{})
	_, err := h.CallTool(t.Context(), fake("stderr-flood"), "crash", nil, nil)
	e := wantKind(t, err, host.KindCrashed, host.PhaseCall)
	if len(e.StderrTail) > 4096 {
		t.Errorf("stderr_tail is %d bytes, want at most 4096", len(e.StderrTail))
	}
	if !strings.HasSuffix(e.StderrTail, "panic: crashing mid-call") || !strings.Contains(e.StderrTail, "last words before serving") {
		t.Errorf("stderr_tail does not end with the last lines: ...%q", e.StderrTail[max(0, len(e.StderrTail)-200):])
	}
}

func TestTooLargeKillsAtTheLimit(t *testing.T) {
	h := newHarness(t, host.Options{MaxResultBytes: 1 << 20})
	res, err := h.CallTool(t.Context(), fake("ok"), "big", map[string]any{"bytes": 900_000}, nil)
	if err != nil {
		t.Fatalf("a result under the limit failed: %v", err)
	}
	if n := len(res.Content[0].(*mcp.TextContent).Text); n != 900_000 {
		t.Errorf("result of %d bytes, want 900000", n)
	}
	start := time.Now()
	_, err = h.CallTool(t.Context(), fake("ok"), "flood", nil, nil)
	within(t, start, 2*time.Second)
	wantKind(t, err, host.KindTooLarge, host.PhaseCall)
}

func TestUnknownToolAndInvalidArguments(t *testing.T) {
	h := newHarness(t, host.Options{})
	_, err := h.CallTool(t.Context(), fake("ok"), "nope", nil, nil)
	wantKind(t, err, host.KindUnknownTool, host.PhaseList)

	_, err = h.CallTool(t.Context(), fake("ok"), "echo", map[string]any{"message": 42}, nil)
	e := wantKind(t, err, host.KindInvalidArguments, host.PhaseCall)
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
			e := wantKind(t, err, host.KindSpawn, host.PhaseSpawn)
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
	res, err := h.CallTool(t.Context(), srv, "crash-idempotent", nil, nil)
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
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := h.CallTool(ctx, fake("ok"), "hang", nil, nil)
	within(t, start, 2*time.Second)
	wantKind(t, err, host.KindCancelled, host.PhaseCall)
}

func TestOverloaded(t *testing.T) {
	h := newHarness(t, host.Options{MaxProcs: 1, Timeout: 500 * time.Millisecond})
	done := make(chan error)
	go func() {
		_, err := h.CallTool(t.Context(), fake("ok"), "hang", nil, nil)
		done <- err
	}()
	// Wait for the first request to hold the only slot.
	for len(h.spawned()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	_, err := h.ListTools(t.Context(), fake("ok"), nil)
	wantKind(t, err, host.KindOverloaded, host.PhaseSpawn)
	<-done
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
		if m := procs.GroupMembers(pid); len(m) != 0 {
			t.Errorf("group %d still has %v after Close", pid, m)
		}
	}
}

// The list cache spares a call the tools/list round trip, but never refuses
// a call on its own: a tool it has not seen sends colibri back to the server.
func TestListCacheNeverRefusesByItself(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := fake("ok")
	marker := filepath.Join(t.TempDir(), "late")
	srv.Env["LATE_TOOL_MARKER"] = marker
	if _, err := h.CallTool(t.Context(), srv, "echo", map[string]any{"message": "x"}, nil); err != nil {
		t.Fatal(err) // lists (no "late"), and caches that list
	}
	os.WriteFile(marker, nil, 0o600) // the next process of the same server has "late"
	res, err := h.CallTool(t.Context(), srv, "late", nil, nil)
	if err != nil {
		t.Fatalf("a tool missing from the cached list was refused: %v", err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "late but here" {
		t.Errorf("result %q", got)
	}
	os.Remove(marker)
	_, err = h.CallTool(t.Context(), srv, "late", nil, nil)
	wantKind(t, err, host.KindUnknownTool, host.PhaseList)
}

// After hostile and normal requests, and Close, colibri's goroutines are
// back where they started: nothing waits forever on a dead server.
func TestNoGoroutineGrowth(t *testing.T) {
	baseline := runtime.NumGoroutine()
	h := host.New(host.Options{Timeout: 500 * time.Millisecond, RetryBackoff: time.Millisecond, TerminateGrace: 100 * time.Millisecond})
	for _, c := range []struct{ fake, tool string }{
		{"ok", "echo"}, {"ok", "hang"}, {"ok", "crash"}, {"hang-init", ""}, {"exit-early", ""},
		{"banner", ""}, {"grandchild", "hang"}, {"stubborn", "echo"}, {"ok", "flood"},
	} {
		if c.tool == "" {
			h.ListTools(t.Context(), fake(c.fake), nil)
		} else {
			h.CallTool(t.Context(), fake(c.fake), c.tool, map[string]any{"message": "x"}, nil)
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
