package tools_test

// Hostile round three: costs a hosted server or a caller controls, each
// bounded, measured in the process's own CPU time (getrusage), never wall
// clock, so that a loaded machine cannot pass or fail them by accident.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/policy"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// cpuTime is the CPU time (user and system) this process has used so far;
// a hosted server's own is not in it.
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
	cs := connect(t, newLiveService(t, reg, serviceOpts{gate: true, poll: -1}))
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

// A deny glob matches without regard to case, and a tool whose name breaks
// the tool-name format (a Cyrillic "е" that looks like "e") is never
// offered or called, whatever the policy: list_tools names it under
// "invalid" with the reason. (All three used to slip past "*delete*".)
func TestHostilePolicyCaseAndLookAlikes(t *testing.T) {
	lookAlike := "d\u0435lete_user" // Cyrillic е
	var la string
	json.Unmarshal([]byte(`"`+lookAlike+`"`), &la)
	srv := listedTools(t, []map[string]any{tool("Delete_user", object), tool("DELETE", object), tool(la, object), tool("get_user", object)})
	srv.Policy = &policy.Policy{Set: policy.Set{Tools: &policy.Globs{Deny: []string{"*delete*"}}}}
	reg := newLive(map[string]*registry.Server{"h": srv})
	for _, aggregate := range []bool{false, true} {
		cs := connect(t, newLiveService(t, reg, serviceOpts{gate: true, aggregate: aggregate, poll: -1}))
		var out tools.ListToolsResult
		if err := json.Unmarshal([]byte(structuredJSON(t, callTool(t, cs, tools.ListToolsTool, map[string]any{"server": "h"}))), &out); err != nil {
			t.Fatal(err)
		}
		st := out.Servers[0]
		if len(st.Tools) != 1 || st.Tools[0].Name != "get_user" {
			t.Errorf("offered %+v, want get_user alone", st.Tools)
		}
		if len(st.Invalid) != 1 || st.Invalid[0].Name != la || !strings.Contains(st.Invalid[0].Reason, "U+0435") {
			t.Errorf("invalid: %+v, want %q with its reason", st.Invalid, la)
		}
		for _, name := range []string{"Delete_user", "DELETE", la} {
			res := callTool(t, cs, tools.CallToolTool, map[string]any{"server": "h", "name": name})
			if k := errorKind(t, res); k != "denied" && k != "unknown_tool" {
				t.Errorf("calling %q: %s %v", name, k, res.Content)
			}
		}
		if aggregate {
			for name := range listed(t, cs) {
				if strings.Contains(strings.ToLower(name), "lete") {
					t.Errorf("aggregate mode offers %q", name)
				}
			}
		}
	}
}

// An 8 MB server or tool name gives an answer of a few KiB: colibri's own
// errors quote a caller's strings clipped (they quoted them whole, up to
// five times: a 40 MB answer).
func TestHostileEchoesClipped(t *testing.T) {
	huge := strings.Repeat("s", 8<<20)
	reg := newLive(map[string]*registry.Server{"h": listedTools(t, []map[string]any{tool("get_user", object)})})
	cs := connect(t, newLiveService(t, reg, serviceOpts{gate: true, poll: -1}))
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{tools.CallToolTool, map[string]any{"server": huge, "name": "x"}},
		{tools.CallToolTool, map[string]any{"server": "h", "name": huge}},
		{tools.ListToolsTool, map[string]any{"server": huge}},
		{tools.ListToolsTool, map[string]any{"server": "h", "tool": huge}},
		{tools.ListToolsTool, map[string]any{"tool": huge}},
	} {
		res := callTool(t, cs, tc.tool, tc.args)
		b, _ := json.Marshal(res)
		if !res.IsError || len(b) > 64<<10 {
			t.Errorf("%s: isError %v, an answer of %d bytes", tc.tool, res.IsError, len(b))
		}
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

// The text of an error a hosted server caused ends with the last lines of
// its stderr (what a model reads: it reached only structuredContent), for
// call_tool and list_tools alike, and in aggregate mode, where a tool with
// an outputSchema gets the text alone.
func TestHostileStderrTailInText(t *testing.T) {
	reg := newLive(map[string]*registry.Server{
		"early": {Command: fakeBin, Args: []string{"exit-early"}},
		"mid":   {Command: fakeBin, Args: []string{"exit-mid-call"}},
	})
	cs := connect(t, newLiveService(t, reg, serviceOpts{gate: true, poll: -1}))
	for _, tc := range []struct {
		tool string
		args map[string]any
		says string
	}{
		{tools.CallToolTool, map[string]any{"server": "early", "name": "any"}, "fatal: missing API key"},
		{tools.ListToolsTool, map[string]any{"server": "early"}, "fatal: missing API key"},
		{tools.CallToolTool, map[string]any{"server": "mid", "name": "any"}, "segmentation fault"},
	} {
		res := callTool(t, cs, tc.tool, tc.args)
		text := resultText(res)
		if !res.IsError || !strings.HasPrefix(text, "colibri: ") || !strings.HasSuffix(text, tc.says) {
			t.Errorf("%s %v: text %q, want it to end with %q", tc.tool, tc.args, text, tc.says)
		}
	}
}
