package host_test

//lint:file-ignore SA1019 the tests drive the sampling, roots and logging that colibri relays on purpose.

// Containment: what a hostile hosted server must not get away with (issue
// "Containment that holds"), each proved against a fake that tries.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/proc"
	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
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
		for proctable.Alive(pid) {
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

// A runner that keeps starting its next generation with setsid and exiting
// leaves nothing behind its request.
func TestRespawningRunnerDoesNotOutlive(t *testing.T) {
	pids := t.TempDir()
	h := newHarness(t, host.Options{})
	srv := fake("review-runner")
	srv.Env["FAKEMCP_PIDS"] = pids
	// The call runs for 1.5 s: the runner has many generations by then.
	if _, err := h.CallTool(t.Context(), srv, "sleep", session.ArgumentsOf(map[string]any{"ms": 1500}), nil, nil); err != nil {
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
		e := wantKind(t, err, failure.KindHandshake, failure.PhaseInitialize)
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

// A secret colibri expanded into a server's environment is redacted where
// the server's words are shown: stderr_tail, the message, colibri's log;
// across the 4 KiB cut of a long stderr line, and line by line for a
// multi-line secret (a PEM key).
func TestSecretsAreRedacted(t *testing.T) {
	const pem = "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----"
	for _, tc := range []struct {
		name, fake, secret string
		shows              string // what colibri reports of the server's words, redacted
	}{
		{"stderr", "leak-secret", "sk-live-8f3a9c2e", "the key [redacted] was refused"},
		{"initialize error", "leak-secret-init", "sk-init-5e1d07c3", "the key [redacted] was refused"},
		{"across a line cut", "review-leak-split", "sk-live-8f3a9c2e", "[redacted]"},
		{"several lines", "leak-secret", pem, "[redacted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, logs := debugLogger()
			h := newHarness(t, host.Options{Logger: logger, Environ: func() []string { return []string{"PATH=/usr/bin:/bin", "TOKEN=" + tc.secret} }})
			srv := fake(tc.fake)
			srv.Env["API_KEY"] = "${TOKEN}"
			_, err := h.ListTools(t.Context(), srv, nil)
			e := wantKind(t, err, failure.KindHandshake, failure.PhaseInitialize)
			h.Close()
			shown := e.Error() + "\n" + e.StderrTail
			if !strings.Contains(shown, tc.shows) {
				t.Errorf("colibri shows %q: want %q", shown, tc.shows)
			}
			// Whole, split where a line was cut, or one line of several:
			// no piece of the secret longer than the redaction minimum.
			for _, piece := range secretPieces(tc.secret) {
				if strings.Contains(strings.ReplaceAll(shown, "\n", ""), piece) || strings.Contains(logs(), piece) {
					t.Errorf("%q reached the error or the log:\n%s\n%s", piece, shown, logs())
				}
			}
		})
	}
}

// leakedSecret is the secret a leaking fake echoes back: in its call
// error and in its log notifications.
const leakedSecret = "sk-live-8f3a9c2e"

// A JSON-RPC error at tools/call, and a log notification, that echo the
// secret reach the caller with it redacted, and colibri's log holds it
// nowhere.
func TestSecretRedactedInCallErrorsAndLogs(t *testing.T) {
	logger, logs := debugLogger()
	h := newHarness(t, host.Options{Logger: logger, Environ: func() []string { return []string{"PATH=/usr/bin:/bin", "TOKEN=" + leakedSecret} }})
	srv := fake("review-leak-call")
	srv.Env["API_KEY"] = "${TOKEN}"
	var mu sync.Mutex
	var logged []string
	caller := &session.Caller{Log: func(_ context.Context, p *mcp.LoggingMessageParams) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, p.Data.(string))
	}, LogLevel: "debug"}
	res, err := h.CallTool(t.Context(), srv, "any", session.ArgumentsOf(map[string]any{}), caller, nil)
	var got string
	if err != nil {
		got = err.Error()
	} else {
		got = res.Content[0].(*mcp.TextContent).Text
	}
	t.Logf("caller saw %q; logs %q", got, logged)
	if strings.Contains(got, leakedSecret) {
		t.Errorf("tools/call JSON-RPC error reached the caller with the secret: %q", got)
	}
	mu.Lock()
	if strings.Contains(strings.Join(logged, "|"), leakedSecret) {
		t.Errorf("a log notification reached the caller with the secret: %q", logged)
	}
	mu.Unlock()
	h.Close()
	if strings.Contains(logs(), leakedSecret) {
		t.Errorf("colibri's log holds the secret")
	}
}

// secretPieces are the secret's lines, and for a one-line secret its two
// halves (a 4 KiB cut may split it: each half must not appear either).
func secretPieces(secret string) []string {
	lines := strings.Split(secret, "\n")
	if len(lines) > 1 {
		return lines
	}
	return []string{secret[:len(secret)/2+1], secret[len(secret)/2-1:]}
}

// debugLogger is a debug-level logger and what it wrote so far.
func debugLogger() (*slog.Logger, func() string) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(b)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	return logger, func() string { mu.Lock(); defer mu.Unlock(); return logs.String() }
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
	e := wantKind(t, err, failure.KindSpawn, failure.PhaseSpawn)
	if strings.Contains(e.Error(), "token-abc123") {
		t.Errorf("spawn error shows the child's PATH: %q", e.Error())
	}
}

// The whole tool list is bounded, not only each message: endless pages of
// big tools, or one cursor handed out forever, fail too_large at the bound,
// and colibri's heap comes back down. (The kind is the proof: unbounded,
// the list would read on until the phase timeout, and fail timeout.)
func TestToolListIsBounded(t *testing.T) {
	h := newHarness(t, host.Options{MaxResultBytes: 2 << 20})
	for _, name := range []string{"endless-pages", "cursor-loop"} {
		t.Run(name, func(t *testing.T) {
			_, err := h.ListTools(t.Context(), fake(name), nil)
			e := wantKind(t, err, failure.KindTooLarge, failure.PhaseList)
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

// askingCaller is a caller with every capability, counting what it is asked.
type askingCaller struct {
	session.Caller
	asked atomic.Int32
}

func newAskingCaller(answer string, block bool) *askingCaller {
	c := &askingCaller{}
	c.CreateMessage = func(ctx context.Context, _ *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		c.asked.Add(1)
		if block { // a caller that never answers
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: answer}}, nil
	}
	c.Elicit = func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		c.asked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"password": "hunter2"}}, nil
	}
	c.ListRoots = func(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
		c.asked.Add(1)
		return &mcp.ListRootsResult{}, nil
	}
	return c
}

// Listing offers a hosted server none of the caller's capabilities: its
// elicitation ("re-enter your password") is refused, gate or no gate, and
// the caller is never asked.
func TestListingAsksTheCallerNothing(t *testing.T) {
	h := newHarness(t, host.Options{})
	caller := newAskingCaller("yes", false)
	tools, err := h.ListTools(t.Context(), fake("ask-caller"), &caller.Caller)
	if err != nil {
		t.Fatal(err)
	}
	if d := tools[0].Description; !strings.HasPrefix(d, "error: ") {
		t.Errorf("the server's elicitation while listing got %q, want an error", d)
	}
	if n := caller.asked.Load(); n != 0 {
		t.Errorf("the caller was asked %d times while a server was listed", n)
	}
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
		res, err := h.CallTool(t.Context(), srv, "ask", session.ArgumentsOf(map[string]any{"go": goFile, "started": started, "done": done}), &a.Caller, nil)
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
	_, err := h.CallTool(t.Context(), srv, "nope", nil, &b.Caller, nil)
	t.Logf("B's call: %v; asked a=%d b=%d", err, a.asked.Load(), b.asked.Load())
	if a.asked.Load() != 0 {
		t.Errorf("caller A was asked (elicitation \"re-enter your password\") during caller B's listing")
	}
	// Let A finish.
	os.WriteFile(goFile, nil, 0o644)
	os.WriteFile(done, nil, 0o644)
	t.Logf("A's result: %q", <-resA)
}

// During a call, a server-to-client request goes to that call's caller.
func TestCallForwardsToItsCaller(t *testing.T) {
	h := newHarness(t, host.Options{})
	caller := newAskingCaller("sampled by the caller", false)
	res, err := h.CallTool(t.Context(), fake("ask-caller"), "ask", nil, &caller.Caller, nil)
	if got := text(t, res, err); !strings.Contains(got, "sampled by the caller") {
		t.Errorf("result %q", got)
	}
}

// On a warm server shared by two callers with calls in flight, a request
// cannot be told apart: it is refused, and neither caller is asked (before,
// one caller's prompt reached the other, whose answer became the first's).
func TestSharedWarmServerRefusesAmbiguousRequests(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := persistent("ask-caller")
	dir := t.TempDir()
	goFile := filepath.Join(dir, "go")
	a, b := newAskingCaller("from a", false), newAskingCaller("from b", false)
	results := make(chan string, 2)
	var inflight sync.WaitGroup
	for i, c := range []*askingCaller{a, b} {
		inflight.Go(func() {
			args := map[string]any{"go": goFile, "started": filepath.Join(dir, strconv.Itoa(i)), "done": filepath.Join(dir, "done")}
			res, err := h.CallTool(t.Context(), srv, "ask", session.ArgumentsOf(args), &c.Caller, nil)
			results <- text(t, res, err)
		})
	}
	// Both calls are in flight on the one warm server, waiting on the go file.
	waitFile(t, filepath.Join(dir, "0"), 10*time.Second)
	waitFile(t, filepath.Join(dir, "1"), 10*time.Second)
	if n := len(h.spawned()); n != 1 {
		t.Fatalf("%d processes: the callers do not share one warm server", n)
	}
	os.WriteFile(goFile, nil, 0o644)
	// Both requests are answered while both calls are still in flight (the
	// fake holds each call until "done"); only then may the calls end.
	waitFile(t, filepath.Join(dir, "0.answered"), 10*time.Second)
	waitFile(t, filepath.Join(dir, "1.answered"), 10*time.Second)
	os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
	inflight.Wait()
	close(results)
	for r := range results {
		if !strings.Contains(r, "error: ") || !strings.Contains(r, "cannot tell which") {
			t.Errorf("an ambiguous request was answered: %q", r)
		}
	}
	if a.asked.Load()+b.asked.Load() != 0 {
		t.Errorf("callers were asked (%d, %d)", a.asked.Load(), b.asked.Load())
	}
}

// rpcCode is the JSON-RPC error code in the ask-caller fake's report of
// the answer it got ("error: {…}"), or 0.
func rpcCode(t *testing.T, got string) int {
	t.Helper()
	var e struct{ Code int }
	if err := json.Unmarshal([]byte(strings.TrimPrefix(got, "error: ")), &e); err != nil {
		t.Fatalf("not an error answer: %q", got)
	}
	return e.Code
}

// validCode: what colibri may send (docs/protocol.md): a standard
// code (−32603 for a refusal of its own) or −32000…−32019; never 0.
func validCode(c int) bool {
	return c == -32700 || c >= -32603 && c <= -32600 || c >= -32019 && c <= -32000
}

// A server-to-client request colibri refuses (no call in flight that may
// answer it, or one it cannot tell apart) carries a valid JSON-RPC error
// code (it was 0).
func TestHostileRefusedRequestCode(t *testing.T) {
	h := newHarness(t, host.Options{})
	// A listing offers no capability: the server's elicitation is refused.
	caller := newAskingCaller("yes", false)
	tools, err := h.ListTools(t.Context(), fake("ask-caller"), &caller.Caller)
	if err != nil {
		t.Fatal(err)
	}
	if c := rpcCode(t, tools[0].Description); !validCode(c) {
		t.Errorf("a refused elicitation while listing: code %d", c)
	}
	// Two calls on one warm server: its request cannot be told apart.
	srv := persistent("ask-caller")
	dir := t.TempDir()
	goFile := filepath.Join(dir, "go")
	a, b := newAskingCaller("from a", false), newAskingCaller("from b", false)
	results := make(chan string, 2)
	var inflight sync.WaitGroup
	for i, c := range []*askingCaller{a, b} {
		inflight.Go(func() {
			args := map[string]any{"go": goFile, "started": filepath.Join(dir, strconv.Itoa(i)), "done": filepath.Join(dir, "done")}
			res, err := h.CallTool(t.Context(), srv, "ask", session.ArgumentsOf(args), &c.Caller, nil)
			results <- text(t, res, err)
		})
	}
	waitFile(t, filepath.Join(dir, "0"), 10*time.Second)
	waitFile(t, filepath.Join(dir, "1"), 10*time.Second)
	os.WriteFile(goFile, nil, 0o644)
	// Both are answered while both calls are in flight; then they end.
	waitFile(t, filepath.Join(dir, "0.answered"), 10*time.Second)
	waitFile(t, filepath.Join(dir, "1.answered"), 10*time.Second)
	os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
	inflight.Wait()
	close(results)
	for r := range results {
		if c := rpcCode(t, r); !validCode(c) || !strings.Contains(r, "cannot tell which") {
			t.Errorf("a refused ambiguous request: code %d: %q", c, r)
		}
	}
}

// A caller that never answers a forwarded request cannot hold teardown: the
// call ends at its timeout, the forwarded request with it, and Close
// returns within its bound with nothing left.
func TestUnansweredRequestEndsWithItsCall(t *testing.T) {
	h := newHarness(t, host.Options{})
	caller := newAskingCaller("", true)
	srv := fake("ask-caller")
	srv.CallTimeout = 500
	_, err := h.CallTool(t.Context(), srv, "ask", nil, &caller.Caller, nil)
	wantKind(t, err, failure.KindTimeout, failure.PhaseCall)
	start := time.Now()
	h.Close()
	within(t, start, 2*host.DefaultTerminateGrace+3*time.Second)
}

// A closed host refuses new work, and Close is a barrier: it returns only
// once every request that entered has ended and been torn down, cancelling
// those still running after its drain bound.
func TestCloseIsABarrier(t *testing.T) {
	h := newHarness(t, host.Options{DrainTimeout: 300 * time.Millisecond})
	started := filepath.Join(t.TempDir(), "started")
	done := make(chan error, 1)
	go func() {
		_, err := h.CallTool(context.Background(), fake("ok"), "sleep", session.ArgumentsOf(map[string]any{"ms": 60_000, "started": started}), nil, nil)
		done <- err
	}()
	waitFile(t, started, 10*time.Second)
	start := time.Now()
	h.Close()
	within(t, start, 300*time.Millisecond+2*host.DefaultTerminateGrace+2*time.Second)
	select {
	case err := <-done:
		wantKind(t, err, failure.KindCancelled, failure.PhaseCall)
	default:
		t.Fatal("Close returned while a request was still running")
	}
	for _, pid := range h.spawned() {
		if m := proctable.GroupMembers(pid); len(m) != 0 {
			t.Errorf("group %d still has %v after Close", pid, m)
		}
	}
	_, err := h.ListTools(t.Context(), fake("ok"), nil)
	wantKind(t, err, failure.KindUnavailable, "")
	if n := len(h.spawned()); n != 1 {
		t.Errorf("%d processes started: a closed host started another", n)
	}
}

// A caller slow to take its notifications stalls no one else on a shared
// warm server: its progress waits in a bounded queue of its own, while the
// relay goes on reading for the other calls.
func TestSlowCallerDoesNotStallOthers(t *testing.T) {
	h := newHarness(t, host.Options{Timeout: 20 * time.Second})
	srv := persistent("ok")
	pidOf(t, h, srv) // the warm process is up
	unblock := make(chan struct{})
	defer close(unblock)
	var got atomic.Int32
	slow := &session.Caller{Progress: func(context.Context, *mcp.ProgressNotificationParams) {
		got.Add(1)
		<-unblock // never reads, for now
	}}
	slowDone := make(chan error, 1)
	go func() {
		_, err := h.CallTool(t.Context(), srv, "progress", session.ArgumentsOf(map[string]any{"steps": 1000}), slow, nil)
		slowDone <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); got.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no progress reached the slow caller")
		}
	}
	start := time.Now()
	if got := callText(t, h, srv, "echo", map[string]any{"message": "fast"}); got != "Echo: fast" {
		t.Errorf("result %q", got)
	}
	within(t, start, 2*time.Second)
	// The slow call still ends, its undelivered progress dropped at the bound.
	select {
	case err := <-slowDone:
		if err != nil {
			t.Errorf("the slow caller's call: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the slow caller's call never ended")
	}
}

// Without the reaper (Options.ReapOrphans unset: where colibri cannot
// become one), docs/security.md promises only the process group: the
// server dies at teardown, but a descendant that left its group (setsid)
// and was orphaned when the server left politely on EOF, or a
// double-forked daemon, is no longer in the server's tree, and survives.
// ReapOrphans is what ends them (TestNothingOutlivesItsRequest). This
// fails if the host reaps orphans without the option.
func TestWithoutTheReaperOnlyTheGroupDies(t *testing.T) {
	for _, tc := range []struct {
		fake      string
		procs     int
		survivors int
	}{
		{"setsid-escape", 2, 1},
		{"double-fork", 3, 1},
	} {
		t.Run(tc.fake, func(t *testing.T) {
			t.Cleanup(func() { proc.ReapAdopted() }) // the test is the reaper: end what survived
			h := host.New(host.Options{Timeout: 5 * time.Second, TerminateGrace: 300 * time.Millisecond})
			srv := fake(tc.fake)
			pids := t.TempDir()
			srv.Env["FAKEMCP_PIDS"] = pids
			if _, err := h.ListTools(t.Context(), srv, nil); err != nil {
				t.Fatal(err)
			}
			recorded := recordedPids(t, pids, tc.procs)
			h.Close()
			var alive []int
			for _, pid := range recorded {
				if proctable.Alive(pid) {
					alive = append(alive, pid)
				}
			}
			if len(alive) != tc.survivors {
				t.Errorf("%d of the server's processes %v are alive after teardown without the reaper (%v), want %d",
					len(alive), recorded, alive, tc.survivors)
			}
		})
	}
}
