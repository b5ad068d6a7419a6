package tools_test

// Aggregate mode in-process: every hosted tool as a tool of colibri's own.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

var editorName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// spawns counts the processes a host started, by server.
type spawns struct {
	mu   sync.Mutex
	n    map[string]int
	last int // the last pid
}

func (s *spawns) add(server string, pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	s.n[server]++
	s.last = pid
}

func (s *spawns) lastPID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *spawns) of(server string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[server]
}

func aggregateRegistry() *liveRegistry {
	return newLive(map[string]*registry.Server{
		"ok":  {Command: fakeBin, Args: []string{"ok"}},
		"odd": {Command: fakeBin, Args: []string{"odd-tools"}, ToolPrefix: "weird"},
	})
}

func TestAggregateExposesHostedTools(t *testing.T) {
	logs := &syncbuf.Buffer{}
	sp := &spawns{}
	svc := newLiveService(t, aggregateRegistry(), serviceOpts{gate: true, aggregate: true, poll: -1, logs: logs, onSpawn: sp.add})
	cs := connect(t, svc)

	// The first tools/list waits for the first reading of each list.
	got := listed(t, cs)
	for _, want := range []string{tools.ServersTool, tools.ListToolsTool, tools.CallToolTool, "ok__echo", "ok__progress", "weird__full"} {
		if got[want] == nil {
			t.Errorf("%s is not offered; tools: %v", want, names(got))
		}
	}
	// "dotted.name/with space" breaks the tool-name format (SEP-986): never
	// offered (internal/toolname).
	if got["weird__dotted_name_with_space"] != nil {
		t.Error("a tool whose name holds a space is offered")
	}
	for name := range got {
		if !editorName.MatchString(name) {
			t.Errorf("%q is not a name every editor accepts", name)
		}
	}

	// The hosted tool as its server describes it.
	full := got["weird__full"]
	b, _ := json.Marshal(full)
	for _, want := range []string{`"title":"A full tool"`, `"description":"Declares everything."`, `"required":["message"]`,
		`"outputSchema":{"properties":{"ok":{"type":"boolean"}},"type":"object"}`, `"readOnlyHint":true`, `"title":"annotated"`,
		`"icons":[{"src":"data:image/png;base64,AA==","mimeType":"image/png"}]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("weird__full lacks %s: %s", want, b)
		}
	}

	// A schema go-sdk's AddTool would panic on leaves its tool out, logged,
	// never fatal. (A bad x-mcp-header never gets this far: go-sdk's client
	// leaves such a tool out of the list; TestAddRecovers covers it.)
	for _, tool := range []string{"stringly", "schemaless", "bad-header"} {
		for name := range got {
			if strings.Contains(name, tool) || strings.Contains(name, strings.ReplaceAll(tool, "-", "_")) {
				t.Errorf("%s is offered as %s", tool, name)
			}
		}
		if tool != "bad-header" && !strings.Contains(logs.String(), "tool="+tool) {
			t.Errorf("leaving %s out was not logged:\n%s", tool, logs)
		}
	}

	// Listing again never starts a per_request server.
	before := sp.of("ok")
	for range 5 {
		listed(t, cs)
	}
	if after := sp.of("ok"); after != before {
		t.Errorf("%d processes started by 5 tools/list", after-before)
	}

	// Calls go the way of call_tool: results, validation, hosted errors.
	res := callTool(t, cs, "ok__echo", map[string]any{"message": "hi"})
	if res.IsError || res.Content[0].(*mcp.TextContent).Text != "Echo: hi" {
		t.Errorf("ok__echo: %v", res.Content)
	}
	if kind := errorKind(t, callTool(t, cs, "ok__echo", map[string]any{"message": 1})); kind != "invalid_arguments" {
		t.Errorf("ok__echo with a number: kind %q, want invalid_arguments", kind)
	}

	// list_tools names each tool's exposed name.
	lt := structuredJSON(t, callTool(t, cs, tools.ListToolsTool, map[string]any{"server": "odd"}))
	var out tools.ListToolsResult
	json.Unmarshal([]byte(lt), &out)
	exposed := map[string]string{}
	for _, e := range out.Servers[0].Tools {
		exposed[e.Name] = e.ExposedName
	}
	if exposed["full"] != "weird__full" || exposed["stringly"] != "" || len(exposed) != 3 ||
		len(out.Servers[0].Invalid) != 1 || out.Servers[0].Invalid[0].Name != "dotted.name/with space" {
		t.Errorf("list_tools in aggregate mode: %v\n%s", exposed, lt)
	}
}

// Progress reaches the caller of an aggregate tool under its own token.
func TestAggregateCallRelaysProgress(t *testing.T) {
	svc := newLiveService(t, aggregateRegistry(), serviceOpts{gate: true, aggregate: true, poll: -1})
	var mu sync.Mutex
	var progress []float64
	st, ct := mcp.NewInMemoryTransports()
	ss, err := svc.NewServer("test").Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Wait()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, r.Params.Progress)
		},
	}).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	listed(t, cs)
	p := &mcp.CallToolParams{Name: "ok__progress", Arguments: map[string]any{"steps": 3}}
	p.SetProgressToken("mine")
	res, err := cs.CallTool(t.Context(), p)
	if err != nil || res.IsError {
		t.Fatalf("ok__progress: %v %v", err, res)
	}
	// go-sdk's client may dispatch notifications after the result.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		got := slices.Clone(progress)
		mu.Unlock()
		if slices.Equal(got, []float64{1, 2, 3}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress = %v, want 1, 2, 3", got)
		}
	}
}

// With the gate off, an aggregate tool is refused as call_tool is, and
// nothing is started for it.
func TestAggregateGateOff(t *testing.T) {
	sp := &spawns{}
	svc := newLiveService(t, aggregateRegistry(), serviceOpts{aggregate: true, poll: -1, onSpawn: sp.add})
	cs := connect(t, svc)
	if listed(t, cs)["ok__echo"] == nil {
		t.Fatal("ok__echo is not offered with the gate off")
	}
	before := sp.of("ok")
	res := callTool(t, cs, "ok__echo", map[string]any{"message": "hi"})
	if kind := errorKind(t, res); kind != "call_disabled" {
		t.Errorf("kind %q, want call_disabled", kind)
	}
	if after := sp.of("ok"); after != before {
		t.Errorf("the gate was off, yet %d processes started", after-before)
	}
}

// The aggregate follows the registry and the hosted lists, and says so
// with tools/list_changed.
func TestAggregateFollowsChanges(t *testing.T) {
	reg := newLive(map[string]*registry.Server{
		"warm": {Command: fakeBin, Args: []string{"ok"}, Lifecycle: registry.Persistent},
	})
	svc := newLiveService(t, reg, serviceOpts{gate: true, aggregate: true, poll: 10 * time.Millisecond})
	cs, changed := connectWatching(t, svc)
	if listed(t, cs)["warm__echo"] == nil {
		t.Fatal("warm__echo is not offered")
	}

	// A hosted server's own list_changed.
	if res := callTool(t, cs, "warm__grow", map[string]any{"name": "sprouted"}); res.IsError {
		t.Fatalf("warm__grow: %v", res.Content)
	}
	waitFor(t, cs, changed, "warm__sprouted", func(m map[string]*mcp.Tool) bool { return m["warm__sprouted"] != nil })
	if res := callTool(t, cs, "warm__sprouted", nil); res.IsError || res.Content[0].(*mcp.TextContent).Text != "grown" {
		t.Errorf("warm__sprouted: %v", res.Content)
	}

	// A server added to the registry, and one taken out.
	reg.set(map[string]*registry.Server{"fresh": {Command: fakeBin, Args: []string{"ok"}}})
	waitFor(t, cs, changed, "fresh__echo and no warm__ tool", func(m map[string]*mcp.Tool) bool {
		return m["fresh__echo"] != nil && m["warm__echo"] == nil && m["warm__sprouted"] == nil
	})

	// A name no longer offered is refused as an unknown tool.
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "warm__echo", Arguments: map[string]any{"message": "x"}})
	if err == nil && !res.IsError {
		t.Errorf("a removed tool answered: %v", res.Content)
	}
}

// The names are the same on every start.
func TestAggregateNamesStable(t *testing.T) {
	var first []string
	for range 2 {
		got := names(listed(t, connect(t, newLiveService(t, aggregateRegistry(), serviceOpts{aggregate: true, poll: -1}))))
		slices.Sort(got)
		if first == nil {
			first = got
		} else if !slices.Equal(got, first) {
			t.Errorf("names changed across starts:\n%v\n%v", first, got)
		}
	}
}

// A server that cannot list is left out and logged, never fatal; fixing
// its entry brings its tools.
func TestAggregateServerThatFailsToList(t *testing.T) {
	logs := &syncbuf.Buffer{}
	reg := newLive(map[string]*registry.Server{
		"ok":     {Command: fakeBin, Args: []string{"ok"}},
		"broken": {Command: "/nonexistent/server"},
	})
	cs, changed := connectWatching(t, newLiveService(t, reg, serviceOpts{aggregate: true, poll: 10 * time.Millisecond, logs: logs}))
	got := listed(t, cs)
	if got["ok__echo"] == nil {
		t.Fatalf("ok__echo is not offered: %v", names(got))
	}
	for name := range got {
		if strings.HasPrefix(name, "broken__") {
			t.Errorf("offered: %s", name)
		}
	}
	if !strings.Contains(logs.String(), "listing a server's tools failed") || !strings.Contains(logs.String(), "server=broken") {
		t.Errorf("the failure was not logged:\n%s", logs)
	}
	reg.set(map[string]*registry.Server{
		"ok":     {Command: fakeBin, Args: []string{"ok"}},
		"broken": {Command: fakeBin, Args: []string{"ok"}},
	})
	waitFor(t, cs, changed, "broken__echo after the fix", func(m map[string]*mcp.Tool) bool { return m["broken__echo"] != nil })
}

// The caller's cancellation ends an aggregate tool's hosted call, and its
// process, as it ends call_tool's.
func TestAggregateCancel(t *testing.T) {
	sp := &spawns{}
	cs := connect(t, newLiveService(t, aggregateRegistry(), serviceOpts{gate: true, aggregate: true, poll: -1, onSpawn: sp.add}))
	if listed(t, cs)["ok__sleep"] == nil {
		t.Fatal("ok__sleep is not offered")
	}
	started := t.TempDir() + "/started"
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ok__sleep", Arguments: map[string]any{"ms": 60000, "started": started}})
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
	pid := sp.lastPID() // the sleeping call's: it started last
	cancel()
	if err := <-done; err == nil {
		t.Error("a cancelled call returned a result")
	}
	// The hosted process (asked to sleep a minute) ends within the
	// teardown bound (TerminateGrace is 200 ms), well before the call's
	// 10 s timeout would end it: reaped, it can no longer be signalled.
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled call's process %d is still running", pid)
		}
	}
}

// The policy decides aggregate mode as it decides list_tools and call_tool:
// a tool it denies everyone is not offered; a caller's own rules narrow
// that caller's tools/list; a call by an exposed name is refused as a call
// through call_tool is.
func TestAggregatePolicy(t *testing.T) {
	reg, _, calls := policyRegistry(t, `{"callers": {"ci-bot": {"tools": {"allow": ["search"]}}}}`, `{"tools": {"deny": ["delete_*"]}}`)
	live := &liveRegistry{}
	live.p.Store(reg)
	svc := newLiveService(t, live, serviceOpts{gate: true, aggregate: true, poll: -1})

	hosted := func(cs *mcp.ClientSession) string {
		var out []string
		for name := range listed(t, cs) {
			if strings.HasPrefix(name, "ann__") {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	local := connectAs(t, svc, reqctx.Stdio)
	if got := hosted(local); got != "ann__meta,ann__read_file,ann__search" {
		t.Errorf("stdio is offered %s", got)
	}
	// Denied to everyone: not offered at all, so not even a name to call.
	if _, err := local.CallTool(t.Context(), &mcp.CallToolParams{Name: "ann__delete_file", Arguments: map[string]any{"path": "/etc"}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("calling ann__delete_file: %v, want go-sdk's unknown tool", err)
	}
	bot := connectAs(t, svc, "ci-bot")
	if got := hosted(bot); got != "ann__search" {
		t.Errorf("ci-bot is offered %s", got)
	}
	// Offered to others, denied to this caller: refused before it is sent.
	if kind := errorKind(t, callTool(t, bot, "ann__read_file", nil)); kind != "denied" {
		t.Errorf("ci-bot calling ann__read_file: kind %q, want denied", kind)
	}
	if res := callTool(t, bot, "ann__search", nil); res.IsError || resultText(res) != "done" {
		t.Errorf("ci-bot calling ann__search: %s", resultText(res))
	}
	if got := strings.Join(entries(t, calls), ","); got != "search" {
		t.Errorf("calls the fake answered: %s, want search alone", got)
	}
}

// A call by an exposed name has its audit line, with exposed_name.
func TestAggregateAudit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h := host.New(host.Options{Timeout: 10 * time.Second, TerminateGrace: 200 * time.Millisecond})
	t.Cleanup(h.Close)
	reg := aggregateRegistry()
	svc := tools.New(tools.Options{Registry: reg.load, Host: h, ExternalCall: true, Aggregate: true, RegistryPoll: -1, Audit: w})
	t.Cleanup(svc.Close)
	cs := connect(t, svc)
	listed(t, cs)
	if res := callTool(t, cs, "ok__echo", map[string]any{"message": "hi"}); res.IsError {
		t.Fatalf("ok__echo: %v", res.Content)
	}
	b, _ := os.ReadFile(path)
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("audit log %q: %v", b, err)
	}
	if rec["server"] != "ok" || rec["tool"] != "echo" || rec["exposed_name"] != "ok__echo" || rec["outcome"] != "ok" {
		t.Errorf("audit line: %s", b)
	}
}

// A Service that answered ListTools before it served reads, once serving,
// the lists it has not read yet.
func TestAggregateListToolsBeforeServing(t *testing.T) {
	svc := newLiveService(t, aggregateRegistry(), serviceOpts{aggregate: true, poll: -1})
	if _, err := svc.ListTools(t.Context(), tools.ListToolsInput{Server: "ok"}, nil); err != nil {
		t.Fatal(err)
	}
	got := listed(t, connect(t, svc))
	if got["ok__echo"] == nil || got["weird__full"] == nil {
		t.Errorf("offered: %v", names(got))
	}
}

// A warm server that answers every tools/list with list_changed, in
// aggregate mode with no client connected: colibri re-lists it a bounded
// number of times (list_changed during its own list is ignored, and a
// "changed" list found the same backs off), and 100,000 notifications per
// list cost bounded CPU. (It was re-listed every second forever, and the
// storm burned more than a core.)
func TestHostileListChangedLoop(t *testing.T) {
	for _, tc := range []struct {
		storm  int
		maxCPU time.Duration
	}{
		{1, time.Second},
		{100_000, 2 * time.Second},
	} {
		t.Run(fmt.Sprint(tc.storm), func(t *testing.T) {
			lists := filepath.Join(t.TempDir(), "lists")
			reg := newLive(map[string]*registry.Server{"storm": {Command: fakeBin, Args: []string{"list-changed-storm"}, Lifecycle: registry.Persistent,
				Env: map[string]string{"FAKEMCP_STORM": fmt.Sprint(tc.storm), "FAKEMCP_LISTS": lists}}})
			before := cpuTime(t)
			svc := newLiveService(t, reg, serviceOpts{aggregate: true, poll: -1})
			svc.NewServer("no client")   // as serve does at start: the catalog fills
			time.Sleep(20 * time.Second) // the window measured: no event to wait for
			cpu := cpuTime(t) - before
			b, _ := os.ReadFile(lists)
			n := strings.Count(string(b), "\n")
			t.Logf("%d notifications per list: %d lists, %v of CPU in 20 s", tc.storm, n, cpu)
			if n < 1 || n > 8 {
				t.Errorf("%d lists in 20 s, want 1 to 8", n)
			}
			if cpu > tc.maxCPU {
				t.Errorf("%v of CPU in 20 s, want at most %v", cpu, tc.maxCPU)
			}
		})
	}
}
