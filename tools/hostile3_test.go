package tools_test

// Hostile round three: costs a hosted server or a caller controls, each
// bounded, measured in the process's own CPU time (getrusage), never wall
// clock, so that a loaded machine cannot pass or fail them by accident.

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

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
	reg := newLive(map[string]*registry.Server{"many": listedTools(t, list)})
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
	if extra := near - base; extra > time.Second {
		t.Errorf("the suggestion among %d long names cost %v of CPU (a call with nothing near: %v)", n, extra, base)
	}
}
