package host_test

// Containment: what a hostile hosted server must not get away with (issue
// "Containment that holds"), each proved against a fake that tries.

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/procs"
)

// recordedPids lists the pids a fake recorded in dir, and fails when there
// are not want of them: a row that did not do what it claims proves nothing.
func recordedPids(t *testing.T, dir string, want int) []int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, _ := strconv.Atoi(e.Name())
		pids = append(pids, pid)
	}
	if len(pids) != want {
		t.Fatalf("the fake recorded %d processes, want %d", len(pids), want)
	}
	return pids
}

func waitDead(t *testing.T, pids []int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, pid := range pids {
		for procs.Alive(pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d outlived its request", pid)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// A descendant that left the server's process group (setsid), or whose
// parent died so that it was orphaned (a double-forked daemon), is killed
// at teardown all the same, per request and for a warm server.
func TestNothingOutlivesItsRequest(t *testing.T) {
	for _, tc := range []struct {
		fake       string
		persistent bool
		procs      int
	}{
		{"setsid-escape", false, 2},
		{"double-fork", false, 3},
		{"setsid-escape", true, 2},
		{"double-fork", true, 3},
	} {
		t.Run(tc.fake+map[bool]string{true: "/persistent", false: "/per-request"}[tc.persistent], func(t *testing.T) {
			h := newHarness(t, host.Options{})
			srv := fake(tc.fake)
			pids := t.TempDir()
			srv.Env["FAKEMCP_PIDS"] = pids
			if tc.persistent {
				srv = persistent(tc.fake)
				srv.Env["FAKEMCP_PIDS"] = pids
			}
			if _, err := h.ListTools(t.Context(), srv, nil); err != nil {
				t.Fatal(err)
			}
			escaped := recordedPids(t, pids, tc.procs)
			h.Close()
			waitDead(t, escaped, 5*time.Second)
		})
	}
}

// A server that prints a message and exits non-zero before it speaks is
// reported as exited, with its status and last words, every time, however
// the exit and colibri's first write race; and it is not retried.
func TestStartupDeathDiagnosedEveryTime(t *testing.T) {
	const n = 40
	h := newHarness(t, host.Options{MaxProcs: n})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := h.ListTools(t.Context(), fake("exit-early"), nil)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e := wantKind(t, err, host.KindHandshake, host.PhaseInitialize)
		if !strings.Contains(e.Error(), "exited with status 3 during initialize") || !strings.Contains(e.StderrTail, "missing API key") {
			t.Errorf("diagnosis %q, stderr_tail %q", e.Error(), e.StderrTail)
		}
		if e.Attempts > 1 {
			t.Errorf("a server that exits with status 3 was tried %d times", e.Attempts)
		}
	}
	if got := len(h.spawned()); got != n {
		t.Errorf("%d processes for %d requests: a refusal to start was retried", got, n)
	}
}

// A secret colibri expanded into a server's environment is redacted where
// the server's words are shown: stderr_tail, the message, colibri's log.
func TestSecretsAreRedacted(t *testing.T) {
	const secret = "sk-live-8f3a9c2e"
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(b)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHarness(t, host.Options{Logger: logger, Environ: func() []string { return []string{"PATH=/usr/bin:/bin", "TOKEN=" + secret} }})
	srv := fake("leak-secret")
	srv.Env["API_KEY"] = "${TOKEN}"
	_, err := h.ListTools(t.Context(), srv, nil)
	e := wantKind(t, err, host.KindHandshake, host.PhaseInitialize)
	if strings.Contains(e.StderrTail, secret) || strings.Contains(e.Error(), secret) {
		t.Errorf("the secret reached the error: %q / %q", e.Error(), e.StderrTail)
	}
	if !strings.Contains(e.StderrTail, "the key [redacted] was refused") {
		t.Errorf("stderr_tail %q: want the line, with the secret redacted", e.StderrTail)
	}
	h.Close()
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the secret reached colibri's log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "[redacted]") {
		t.Errorf("the server's stderr line was not logged (redacted):\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// A command not found is reported without the child's PATH value, which is
// the registry's to set and may say more than it should.
func TestSpawnErrorHidesPATH(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := fake("ok")
	srv.Command = "no-such-mcp-server"
	srv.Env["PATH"] = filepath.Join(t.TempDir(), "token-abc123") + ":/bin"
	_, err := h.ListTools(t.Context(), srv, nil)
	e := wantKind(t, err, host.KindSpawn, host.PhaseSpawn)
	if strings.Contains(e.Error(), "token-abc123") {
		t.Errorf("spawn error shows the child's PATH: %q", e.Error())
	}
}

// The whole tool list is bounded, not only each message: endless pages of
// big tools, or one cursor handed out forever, fail too_large at the bound,
// and colibri's heap comes back down.
func TestToolListIsBounded(t *testing.T) {
	h := newHarness(t, host.Options{MaxResultBytes: 2 << 20})
	for _, name := range []string{"endless-pages", "cursor-loop"} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := h.ListTools(t.Context(), fake(name), nil)
			within(t, start, 5*time.Second)
			e := wantKind(t, err, host.KindTooLarge, host.PhaseList)
			if !strings.Contains(e.Error(), "tool list passed") {
				t.Errorf("message %q", e.Error())
			}
		})
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > 64<<20 {
		t.Errorf("heap %d MB after the bounded lists", ms.HeapAlloc>>20)
	}
}
