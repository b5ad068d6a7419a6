package main

// The chaos catalogue: hostile fake servers (this test binary re-run as a
// named fake), each run through the real colibri-mcp binary.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

func TestChaosCatalogue(t *testing.T) {
	t.Parallel() // a long test of its own process: it runs beside the others (docs/testing.md)
	pids := t.TempDir()
	const timeout = time.Second
	// The healthy server the rows are checked against keeps a timeout of its
	// own: moving 10 MB may take longer than the fakes' one second.
	servers := registryDoc{"demo": {"command": demoBin, "timeout_ms": 30000}}
	for _, name := range []string{"hang-init", "hang-list", "hang-call", "exit-early", "exit-mid-call", "banner",
		"stdout-flood", "stderr-flood-call", "invalid-jsonrpc", "wrong-ids", "drip", "close-stdout", "no-stdin",
		"grandchild", "fork-storm"} {
		servers[name] = fakeServer(name, pids)
	}
	// Rows about a call give the start a long timeout of its own: a slow
	// start on a loaded machine must not turn "timeout at call" into
	// "timeout at initialize".
	for _, name := range []string{"hang-call", "exit-mid-call", "stdout-flood", "stderr-flood-call", "invalid-jsonrpc",
		"wrong-ids", "drip", "close-stdout", "no-stdin", "grandchild", "fork-storm"} {
		servers[name]["timeout_ms"] = 30000
		servers[name]["call_timeout_ms"] = timeout.Milliseconds()
	}
	// The storm is forked inside the call: its call timeout leaves the 50
	// forks ample time, so the row proves that all 51 processes die.
	servers["fork-storm"]["call_timeout_ms"] = 5000
	// Reading up to the 16 MiB limit takes a race-built colibri more than a
	// second: the row is about where the reading stops, not how fast.
	servers["stdout-flood"]["call_timeout_ms"] = 30000
	// So does reading 50 MB of stderr: the row is about surviving it.
	servers["stderr-flood-call"]["call_timeout_ms"] = 30000
	cmd := exec.Command(colibriBin, "serve", "--external-config", writeRegistry(t, servers),
		"--external-call", "--timeout", timeout.String(), "--retry-backoff", "10ms")
	cmd.Env = append(os.Environ(), pinEnv(t), "E2E_SECRET=x")
	client := mcp.NewClient(&mcp.Implementation{Name: "chaos", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	colibriPid := cmd.Process.Pid

	next := func(t *testing.T) {
		t.Helper()
		res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "demo", "name": "echo", "arguments": map[string]any{"message": "next"}})
		if res.IsError || res.Content[0].(*mcp.TextContent).Text != "Echo: next" {
			t.Fatalf("the next request failed: %v", res.Content)
		}
	}
	next(t) // warm up: colibri's own fds settle
	baseFDs := proctable.FDs(colibriPid)

	big := strings.Repeat("x", 10<<20)
	// Moving and decoding 10 MB costs time of its own (much more under the
	// race detector): the bound of the row that sends it starts after that.
	start := time.Now()
	if res := callWithin(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "demo", "name": "echo", "arguments": map[string]any{"message": big}}, 3*time.Minute); res.IsError {
		t.Fatalf("10 MB to a healthy server: %v", res.Content)
	}
	bigCost := time.Since(start)
	cases := []struct {
		fake   string
		tool   string // default "any"
		args   map[string]any
		kind   string
		phase  string
		stderr string
		procs  int // processes the fake must have started, itself included (default 1)
	}{
		{fake: "hang-init", kind: "timeout", phase: "initialize"},
		{fake: "hang-list", kind: "timeout", phase: "list"},
		{fake: "hang-call", kind: "timeout", phase: "call"},
		{fake: "exit-early", kind: "handshake", phase: "initialize", stderr: "missing API key"},
		{fake: "exit-mid-call", kind: "crashed", phase: "call", stderr: "segmentation fault"},
		{fake: "banner", tool: "echo", kind: "handshake", phase: "initialize"},
		{fake: "stdout-flood", kind: "too_large", phase: "call"},
		{fake: "stderr-flood-call"},
		{fake: "invalid-jsonrpc", kind: "crashed", phase: "call"},
		{fake: "wrong-ids", kind: "timeout", phase: "call"},
		{fake: "drip", kind: "timeout", phase: "call"},
		{fake: "close-stdout", kind: "crashed", phase: "call"},
		{fake: "no-stdin", args: map[string]any{"payload": big}, kind: "timeout", phase: "call"},
		{fake: "grandchild", tool: "hang", kind: "timeout", phase: "call", stderr: "grandchild pid", procs: 2},
		{fake: "fork-storm", kind: "timeout", phase: "call", stderr: "50 sleepers started", procs: 51},
	}
	for _, tc := range cases {
		t.Run(tc.fake, func(t *testing.T) {
			tool := tc.tool
			if tool == "" {
				tool = "any"
			}
			// The phase's timeout, and slack for the spawn, the handshake
			// and the answer on a loaded machine (the fake is a small Go
			// program; this test runs beside other long ones): a bound,
			// where a hang would take forever without it.
			bound := timeout + 10*time.Second
			switch tc.fake {
			case "no-stdin":
				bound += bigCost
			case "fork-storm":
				bound = 5*time.Second + 10*time.Second
			case "stdout-flood", "stderr-flood-call":
				bound = 30 * time.Second
			}
			start := time.Now()
			// The client waits longer than the bound, so that a late answer
			// is reported as late, with its kind.
			res := callWithin(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": tc.fake, "name": tool, "arguments": tc.args}, bound+time.Minute)
			elapsed := time.Since(start)
			if elapsed > bound {
				t.Errorf("answered after %s, want within %s", elapsed.Round(time.Millisecond), bound)
			}
			if tc.kind == "" {
				if res.IsError || res.Content[0].(*mcp.TextContent).Text != "survived the flood" {
					t.Errorf("result %v", res.Content)
				}
			} else {
				b, _ := json.Marshal(res.StructuredContent)
				var sc struct {
					E struct {
						Kind       string `json:"kind"`
						Phase      string `json:"phase"`
						StderrTail string `json:"stderr_tail"`
					} `json:"colibri_error"`
				}
				json.Unmarshal(b, &sc)
				if sc.E.Kind != tc.kind || sc.E.Phase != tc.phase {
					t.Errorf("kind/phase %s/%s, want %s/%s: %s", sc.E.Kind, sc.E.Phase, tc.kind, tc.phase, b)
				}
				if !strings.Contains(sc.E.StderrTail, tc.stderr) {
					t.Errorf("stderr_tail %q lacks %q", sc.E.StderrTail, tc.stderr)
				}
			}
			want := max(tc.procs, 1)
			if got := assertFakesGone(t, pids); got != want {
				t.Errorf("the fake recorded %d processes, want %d: the row did not do what it claims", got, want)
			}
			next(t)
			// Colibri's own descriptors come back to where they were.
			for deadline := time.Now().Add(5 * time.Second); proctable.FDs(colibriPid) > baseFDs; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Errorf("colibri holds %d fds, %d before", proctable.FDs(colibriPid), baseFDs)
					break
				}
			}
		})
	}
}

// assertFakesGone waits (bounded) until every process a fake recorded in
// dir is dead, forgets them, and returns how many there were.
func assertFakesGone(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatalf("unexpected file %s in the pid folder", e.Name())
		}
		for proctable.Alive(pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d of the fake is still alive", pid)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		os.Remove(filepath.Join(dir, e.Name()))
	}
	return len(entries)
}
