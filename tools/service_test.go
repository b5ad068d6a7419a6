package tools_test

// The three tools in-process, through go-sdk's in-memory transports, so that
// the race detector sees tools.Service and the host it drives.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/testbuild"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

var fakeBin string

func TestMain(m *testing.M) {
	dir := testbuild.MustDir()
	var err error
	if fakeBin, err = testbuild.Fake(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// connect serves svc in-process and returns a connected client session.
func connect(t *testing.T, svc *tools.Service) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := svc.NewServer("test").Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "in-process", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func newService(t *testing.T, gate bool, reg *registry.Registry) *tools.Service {
	t.Helper()
	h := host.New(host.Options{Timeout: 10 * time.Second, TerminateGrace: 200 * time.Millisecond})
	t.Cleanup(h.Close)
	svc := tools.New(tools.Options{
		Registry:     func() (*registry.Registry, error) { return reg, nil },
		ConfigPath:   "in-memory",
		Host:         h,
		ExternalCall: gate,
	})
	t.Cleanup(svc.Close) // before the host's
	return svc
}

func fakeRegistry() *registry.Registry {
	return &registry.Registry{Servers: map[string]*registry.Server{
		"ok":     {Name: "ok", Command: fakeBin, Args: []string{"ok"}, Env: map[string]string{"SECRET_THING": "s3cret"}},
		"broken": {Name: "broken", Command: "/nonexistent/server"},
	}}
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// errorKind is the kind of a colibri_error result, or "".
func errorKind(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var sc struct {
		E *struct{ Kind string } `json:"colibri_error"`
	}
	json.Unmarshal(b, &sc)
	if sc.E == nil {
		return ""
	}
	if !res.IsError {
		t.Error("a colibri_error without isError")
	}
	return sc.E.Kind
}

func TestServiceInProcess(t *testing.T) {
	cs := connect(t, newService(t, true, fakeRegistry()))

	res := callTool(t, cs, tools.ServersTool, nil)
	b, _ := json.Marshal(res.StructuredContent)
	if res.IsError || !strings.Contains(string(b), `"env_keys":["SECRET_THING"]`) || strings.Contains(string(b), "s3cret") {
		t.Errorf("servers: %s", b)
	}

	res = callTool(t, cs, tools.ListToolsTool, nil)
	b, _ = json.Marshal(res.StructuredContent)
	if res.IsError || !strings.Contains(string(b), `"name":"echo"`) || !strings.Contains(string(b), `"kind":"spawn"`) {
		t.Errorf("list_tools of every server: %s", b)
	}

	// Concurrent calls, for the race detector.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			msg := fmt.Sprint("m", i)
			res := callTool(t, cs, tools.CallToolTool, map[string]any{"server": "ok", "name": "echo", "arguments": map[string]any{"message": msg}})
			if res.IsError || res.Content[0].(*mcp.TextContent).Text != "Echo: "+msg {
				t.Errorf("call %d: %v", i, res.Content)
			}
		})
	}
	wg.Wait()

	for _, c := range []struct {
		args map[string]any
		kind string
	}{
		{map[string]any{"server": "nope", "name": "echo"}, "unknown_server"},
		{map[string]any{"server": "ok", "name": "nope"}, "unknown_tool"},
		{map[string]any{"server": "ok", "name": "echo", "arguments": map[string]any{"message": 1}}, "invalid_arguments"},
		{map[string]any{"server": "ok", "name": "echo", "extra": true}, "invalid_arguments"},
		{map[string]any{"server": "broken", "name": "echo"}, "spawn"},
	} {
		if got := errorKind(t, callTool(t, cs, tools.CallToolTool, c.args)); got != c.kind {
			t.Errorf("call %v: kind %q, want %q", c.args, got, c.kind)
		}
	}
}

func TestServiceGateOffInProcess(t *testing.T) {
	cs := connect(t, newService(t, false, fakeRegistry()))
	res := callTool(t, cs, tools.CallToolTool, map[string]any{"server": "ok", "name": "echo", "arguments": map[string]any{"message": "x"}})
	if got := errorKind(t, res); got != "call_disabled" {
		t.Errorf("kind %q, want call_disabled", got)
	}
}

// A caller's cancellation ends the hosted call in-process too.
func TestServiceCancelInProcess(t *testing.T) {
	cs := connect(t, newService(t, true, fakeRegistry()))
	started := t.TempDir() + "/started"
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.CallToolTool,
			Arguments: map[string]any{"server": "ok", "name": "sleep", "arguments": map[string]any{"ms": 60000, "started": started}}})
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hosted call never started")
		}
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("a cancelled call returned a result")
	}
}

// cpuTime is the CPU time (user and system) this process has used so far;
// a hosted server's own is not in it. Costs a hosted server or a caller
// controls are bounded in it, never in wall-clock time, so that a loaded
// machine cannot pass or fail them by accident.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A server listing 80,000 tools whose 128-character names all lie near the
// mistyped one: the "did you mean" of the unknown_tool answer stays a
// bounded cost (it was ~25 s of CPU per call: a full edit-distance table
// against every name).
func TestHostileSuggestionCost(t *testing.T) {
	const n = 80_000
	prefix := strings.Repeat("a", 120)
	list := make([]map[string]any, n)
	for i := range list {
		// Every name is 4 edits from the word: each stays a candidate to
		// the last row of the table.
		list[i] = tool(fmt.Sprintf("%s%08d", prefix, i), object)
	}
	many := listedTools(t, list)
	many.Pin = registry.PinOff // the pins' own cost per list is another test's
	reg := newLive(map[string]*registry.Server{"many": many})
	// Listing 80,000 tools under -race on a loaded machine may take more
	// than the usual 10 s: the bound here is CPU, not the phase timeout.
	cs := connect(t, newLiveService(t, reg, serviceOpts{gate: true, poll: -1, timeout: time.Minute}))
	call := func(word string) time.Duration {
		before := cpuTime(t)
		res := callTool(t, cs, tools.CallToolTool, map[string]any{"server": "many", "name": word})
		if k := errorKind(t, res); k != "unknown_tool" {
			t.Fatalf("kind %q, want unknown_tool", k)
		}
		return cpuTime(t) - before
	}
	// An unknown tool is looked for in a fresh list, whose cost (decoding
	// 80,000 tools) is the same for any name: a short name, which no
	// candidate is near in length, measures it. What a near name costs
	// beyond that is the suggestion's.
	call("zz")
	base := call("zz")
	near := call(prefix + "zzzzzzzz")
	// 33.7 s before the bound; the margin absorbs the noise of two
	// measurements of several seconds each under -race.
	if extra := near - base; extra > 3*time.Second {
		t.Errorf("the suggestion among %d long names cost %v of CPU (a call with nothing near: %v)", n, extra, base)
	}
}
