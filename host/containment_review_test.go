package host_test

//lint:file-ignore SA1019 the tests drive the sampling, roots and logging that colibri relays on purpose.

// Containment tests found by a hostile review of issue 10's first cut:
// each failed before its fix.

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
)

const reviewSecret = "sk-live-8f3a9c2e"

// A JSON-RPC error at tools/call, and a log notification, that echo the
// secret reach the caller with it redacted, and colibri's log holds it
// nowhere.
func TestSecretRedactedInCallErrorsAndLogs(t *testing.T) {
	logger, logs := debugLogger()
	h := newHarness(t, host.Options{Logger: logger, Environ: func() []string { return []string{"PATH=/usr/bin:/bin", "TOKEN=" + reviewSecret} }})
	srv := fake("review-leak-call")
	srv.Env["API_KEY"] = "${TOKEN}"
	var mu sync.Mutex
	var logged []string
	caller := &session.Caller{Log: func(_ context.Context, p *mcp.LoggingMessageParams) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, p.Data.(string))
	}, LogLevel: "debug"}
	res, err := h.CallTool(t.Context(), srv, "any", map[string]any{}, caller)
	var got string
	if err != nil {
		got = err.Error()
	} else {
		got = res.Content[0].(*mcp.TextContent).Text
	}
	t.Logf("caller saw %q; logs %q", got, logged)
	if strings.Contains(got, reviewSecret) {
		t.Errorf("tools/call JSON-RPC error reached the caller with the secret: %q", got)
	}
	mu.Lock()
	if strings.Contains(strings.Join(logged, "|"), reviewSecret) {
		t.Errorf("a log notification reached the caller with the secret: %q", logged)
	}
	mu.Unlock()
	h.Close()
	if strings.Contains(logs(), reviewSecret) {
		t.Errorf("colibri's log holds the secret")
	}
}

// A server that exits 3 ("missing API key") while a background child still
// holds its stdout is reported at once as exited with status 3, not as a
// timeout after the whole initialize timeout.
func TestExitDiagnosedWhileChildHoldsStdout(t *testing.T) {
	h := newHarness(t, host.Options{Timeout: 2 * time.Second, Retries: 1})
	start := time.Now()
	_, err := h.ListTools(t.Context(), fake("review-exit-holder"), nil)
	var e *failure.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v", err)
	}
	t.Logf("after %s: %v (tail %q)", time.Since(start), e, e.StderrTail)
	if !strings.Contains(e.Error(), "exited with status 3") {
		t.Errorf("misdiagnosed: kind %s/%s: %v, want exited with status 3", e.Kind, e.Phase, e)
	}
}

// A runner that keeps starting its next generation with setsid and exiting
// leaves nothing behind its request.
func TestRespawningRunnerDoesNotOutlive(t *testing.T) {
	pids := t.TempDir()
	h := newHarness(t, host.Options{})
	srv := fake("review-runner")
	srv.Env["FAKEMCP_PIDS"] = pids
	// The call runs for 1.5 s: the runner has many generations by then.
	if _, err := h.CallTool(t.Context(), srv, "sleep", map[string]any{"ms": 1500}, nil); err != nil {
		t.Fatal(err)
	}
	h.Close()
	// Every generation recorded by then dies, and no new one is born after:
	// a survivor would go on starting generations (each is recorded by its
	// parent as it starts).
	born := pidsIn(t, pids)
	if len(born) < 2 {
		t.Fatalf("%d generations recorded: the runner did not run", len(born))
	}
	waitDead(t, born, 5*time.Second)
	if later := pidsIn(t, pids); len(later) != len(born) {
		t.Errorf("%d generations started after Host.Close returned", len(later)-len(born))
	}
}

// pidsIn lists the pids a fake recorded in dir.
func pidsIn(t *testing.T, dir string) []int {
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
	return pids
}

// On a warm server, while caller A's call is in flight, a listing on
// behalf of caller B: the server's elicitation ("re-enter your password")
// sent while B lists is refused (listing asks no one, and with two
// operations in flight nothing ties it to A's call); A is never asked.
func TestListingRequestNeverReachesACall(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := persistent("ask-caller")
	dir := t.TempDir()
	goFile, started, done := dir+"/go", dir+"/a", dir+"/done"
	a, b := newAskingCaller("from a", false), newAskingCaller("from b", false)
	resA := make(chan string, 1)
	go func() {
		res, err := h.CallTool(t.Context(), srv, "ask", map[string]any{"go": goFile, "started": started, "done": done}, &a.Caller)
		if err != nil {
			resA <- err.Error()
			return
		}
		resA <- res.Content[0].(*mcp.TextContent).Text
	}()
	waitFile(t, started, 10*time.Second) // A's call is in flight, held
	if n := len(h.spawned()); n != 1 {
		t.Fatalf("%d processes: not one shared warm server", n)
	}
	// B calls a tool the cached list lacks: colibri lists afresh, on B's
	// behalf, while A's call is in flight.
	_, err := h.CallTool(t.Context(), srv, "nope", nil, &b.Caller)
	t.Logf("B's call: %v; asked a=%d b=%d", err, a.asked.Load(), b.asked.Load())
	if a.asked.Load() != 0 {
		t.Errorf("caller A was asked (elicitation \"re-enter your password\") during caller B's listing")
	}
	// Let A finish.
	os.WriteFile(goFile, nil, 0o644)
	os.WriteFile(done, nil, 0o644)
	t.Logf("A's result: %q", <-resA)
}
