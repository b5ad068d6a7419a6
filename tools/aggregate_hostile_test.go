package tools_test

// Aggregate mode against hostile hosted servers and registries: names,
// schemas a caller's SDK refuses, huge lists, edit storms, hung servers.

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// listedTools is a registry entry for the "listed-tools" fake, which lists
// exactly tools (read from a file at every tools/list) and answers a call
// with "called NAME ARGUMENTS".
func listedTools(t *testing.T, tools []map[string]any) *registry.Server {
	t.Helper()
	b, err := json.Marshal(map[string]any{"tools": tools})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "tools-*.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return &registry.Server{Command: fakeBin, Args: []string{"listed-tools"}, Env: map[string]string{"FAKEMCP_TOOLS_FILE": f.Name()}}
}

func tool(name string, schema any) map[string]any {
	return map[string]any{"name": name, "inputSchema": schema}
}

var object = map[string]any{"type": "object"}

// Whatever the hosted servers call their tools, each exposed name is one an
// editor accepts, names one tool only, reaches that tool, and is the same
// whatever order the servers list their tools in. (A regression test: this
// held before the review.)
func TestAggregateHostileNames(t *testing.T) {
	// Names that break MCP's tool-name format are never offered
	// (internal/toolname); those that keep to it may still be too long for
	// an editor, or hold characters an editor refuses.
	long := strings.Repeat("x", 128)
	valid := []map[string]any{tool(long, object), tool("h/llo", object), tool("a__b", object),
		tool("a.b", object), tool("fail_me", object)}
	hostile := append(slices.Clone(valid), tool("", object), tool(strings.Repeat("x", 10000), object), tool("héllo✓", object), tool("a b", object))
	serve := func(list []map[string]any) map[string]string {
		// Server "x" with tool "a__b", server "x__a" with tool "b": both
		// would be x__a__b.
		reg := newLive(map[string]*registry.Server{"x": listedTools(t, list), "x__a": listedTools(t, []map[string]any{tool("b", object)})})
		cs := connect(t, newLiveService(t, reg, serviceOpts{gate: true, aggregate: true, poll: -1}))
		// The first tools/list waits for every list to be read: a name
		// depends on the others (x__a__b is plain until x's list is known).
		offered := listed(t, cs)
		lt := structuredJSON(t, callTool(t, cs, tools.ListToolsTool, nil))
		var out tools.ListToolsResult
		if err := json.Unmarshal([]byte(lt), &out); err != nil {
			t.Fatal(err)
		}
		exposed := map[string]string{} // "server/tool" -> its exposed name
		for _, st := range out.Servers {
			for _, e := range st.Tools {
				if offered[e.ExposedName] == nil {
					t.Errorf("%s/%.20q: exposed_name %q is not offered", st.Server, e.Name, e.ExposedName)
				}
				exposed[st.Server+"/"+e.Name] = e.ExposedName
			}
		}
		if len(exposed) != len(valid)+1 || len(offered) != len(valid)+4 {
			t.Fatalf("%d tools named, %d offered: %v", len(exposed), len(offered), names(offered))
		}
		seen := map[string]string{}
		for ref, name := range exposed {
			if !editorName.MatchString(name) {
				t.Errorf("%.40q is exposed as %q, which an editor refuses", ref, name)
			}
			if other, dup := seen[name]; dup {
				t.Errorf("%.40q and %.40q share %q", ref, other, name)
			}
			seen[name] = ref
			// The name reaches its own tool, and the hosted isError comes
			// back as the tool gave it.
			server, hostedName, _ := strings.Cut(ref, "/")
			res := callTool(t, cs, name, nil)
			if want := "called " + hostedName + " {}"; resultText(res) != want || res.IsError != strings.HasPrefix(hostedName, "fail") {
				t.Errorf("%s (server %s) answered %.60q (isError %v), want %.60q", name, server, resultText(res), res.IsError, want)
			}
		}
		return exposed
	}
	first := serve(hostile)
	if first["x/a__b"] == first["x__a/b"] || !strings.HasPrefix(first["x/a__b"], "x__a__b_") || !strings.HasPrefix(first["x__a/b"], "x__a__b_") {
		t.Errorf("x/a__b is %q, x__a/b is %q: want both x__a__b with a hash of their own", first["x/a__b"], first["x__a/b"])
	}
	if first["x/h/llo"] != "x__h_llo" || len(first["x/"+long]) != 64 {
		t.Errorf("names: %q, %q", first["x/h/llo"], first["x/"+long])
	}
	reversed := slices.Clone(hostile)
	slices.Reverse(reversed)
	if again := serve(reversed); !maps(again, first) {
		t.Errorf("the names changed with the order of the list:\n%v\n%v", first, again)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A tool whose schemas stray from the shape MCP gives them is not offered:
// the official TypeScript SDK's client refuses a whole tools/list for one
// such tool, so offering it would hide every tool colibri has
// (TestTypeScriptClientAggregate proves it end to end). It stays callable
// through call_tool.
func TestAggregateLeavesOutUnportableSchemas(t *testing.T) {
	bad := map[string]map[string]any{
		"nullable":    tool("nullable", map[string]any{"type": []any{"object", "null"}}),
		"output_text": {"name": "output_text", "inputSchema": object, "outputSchema": map[string]any{"type": "string"}},
		"bool_prop":   tool("bool_prop", map[string]any{"type": "object", "properties": map[string]any{"x": true}}),
		"props_list":  tool("props_list", map[string]any{"type": "object", "properties": []any{}}),
		"required_1":  tool("required_1", map[string]any{"type": "object", "required": "x"}),
		"output_bool": {"name": "output_bool", "inputSchema": object, "outputSchema": map[string]any{"type": "object", "properties": map[string]any{"ok": false}}},
	}
	list := []map[string]any{tool("good", map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{}}, "required": []any{"x"}})}
	for _, b := range bad {
		list = append(list, b)
	}
	logs := &syncbuf.Buffer{}
	cs := connect(t, newLiveService(t, newLive(map[string]*registry.Server{"s": listedTools(t, list)}), serviceOpts{gate: true, aggregate: true, poll: -1, logs: logs}))
	got := listed(t, cs)
	if got["s__good"] == nil {
		t.Fatalf("s__good is not offered: %v", names(got))
	}
	for name := range bad {
		if got["s__"+name] != nil {
			t.Errorf("s__%s is offered: %s", name, mustJSON(got["s__"+name]))
		}
		if !strings.Contains(logs.String(), "tool="+name+" ") {
			t.Errorf("leaving %s out was not logged", name)
		}
	}
	if res := callTool(t, cs, tools.CallToolTool, map[string]any{"server": "s", "name": "output_text"}); resultText(res) != "called output_text {}" {
		t.Errorf("output_text through call_tool: %s", resultText(res))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A registry rewritten a hundred times a second neither starts a process
// per edit nor makes the hosted tools vanish and come back: an edit of the
// description starts nothing, an edit that changes the server reads its
// list again one read at a time, and the last list stays offered meanwhile.
// Processes are counted by the fake's own pid files.
func TestAggregateRegistryEditStorm(t *testing.T) {
	pids := t.TempDir()
	entry := func(desc string, gen int) *registry.Server {
		return &registry.Server{Command: fakeBin, Args: []string{"ok"}, Description: desc,
			Env: map[string]string{"FAKEMCP_PIDS": pids, "GEN": fmt.Sprint(gen)}}
	}
	reg := newLive(map[string]*registry.Server{"ok": entry("v0", 0)})
	cs, changed := connectWatching(t, newLiveService(t, reg, serviceOpts{gate: true, aggregate: true, poll: 10 * time.Millisecond}))
	if listed(t, cs)["ok__echo"] == nil {
		t.Fatal("ok__echo is not offered")
	}
	started := func() int {
		ents, err := os.ReadDir(pids)
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	// storm edits the registry every 10 ms for a second, edit(i) giving
	// the entry, while a client lists the tools on every list_changed, as
	// an editor does.
	storm := func(edit func(i int) *registry.Server) (lists int) {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
					reg.set(map[string]*registry.Server{"ok": edit(i)})
				}
			}
		}()
		end := time.After(time.Second)
		for {
			select {
			case <-changed:
				begun := time.Now()
				if listed(t, cs)["ok__echo"] == nil {
					t.Errorf("ok__echo vanished from a tools/list during the storm")
				}
				if took := time.Since(begun); took > 5*time.Second {
					t.Errorf("a tools/list took %s during the storm", took)
				}
				lists++
			case <-end:
				close(stop)
				<-done
				return lists
			}
		}
	}

	before := started()
	lists := storm(func(i int) *registry.Server { return entry(fmt.Sprintf("v%d", i), 0) })
	if n := started() - before; n != 0 {
		t.Errorf("%d processes started by a storm of description edits, want none", n)
	}
	if lists == 0 {
		t.Error("no list_changed during a storm of description edits")
	}

	before = started()
	storm(func(i int) *registry.Server { return entry("v", i) })
	// One read runs at a time, the next a second after it ends.
	if n := started() - before; n > 4 {
		t.Errorf("%d processes started by a one-second storm of edits, want at most 4", n)
	}
}

// A server that hangs at initialize holds up a tools/list for ListWait at
// most; the others' tools are offered. (A regression test.)
func TestAggregateHungServerDoesNotHoldUpTheList(t *testing.T) {
	reg := newLive(map[string]*registry.Server{
		"hung": {Command: fakeBin, Args: []string{"hang-init"}, TimeoutMS: 60_000},
		"ok":   {Command: fakeBin, Args: []string{"ok"}},
	})
	// ListWait leaves the healthy server time to start on a loaded machine;
	// the hung one would hold the list for its 60 s timeout without it.
	const listWait = 3 * time.Second
	cs := connect(t, newLiveService(t, reg, serviceOpts{aggregate: true, poll: -1, listWait: listWait}))
	begun := time.Now()
	got := listed(t, cs)
	if took := time.Since(begun); took > listWait+10*time.Second {
		t.Errorf("the first tools/list took %s with a hung server (ListWait %s)", took, listWait)
	}
	if got["ok__echo"] == nil {
		t.Errorf("ok__echo is not offered: %v", names(got))
	}
}

// A server listing 10,000 tools is offered, and listed again, in bounded
// time, and a registry edit that changes none of them (a description)
// does not name and encode every hosted tool again (TestVisibleToScales
// covers the listing itself).
func TestAggregateManyTools(t *testing.T) {
	var list []map[string]any
	for i := range 10_000 {
		list = append(list, map[string]any{"name": fmt.Sprintf("tool_%05d", i), "description": "Does one thing.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}})
	}
	big := listedTools(t, list)
	reg := newLive(map[string]*registry.Server{"big": big, "ok": {Command: fakeBin, Args: []string{"ok"}, Lifecycle: registry.Persistent}})
	cs := connect(t, newLiveService(t, reg, serviceOpts{gate: true, aggregate: true, poll: -1}))
	if n := len(listed(t, cs)); n < 10_000 {
		t.Fatalf("%d tools offered", n)
	}
	begun := time.Now()
	if n := len(listed(t, cs)); n < 10_000 {
		t.Fatalf("%d tools offered", n)
	}
	t.Logf("listing 10,000 hosted tools took %s", time.Since(begun))
	if took := time.Since(begun); took > 15*time.Second {
		t.Errorf("listing 10,000 hosted tools took %s", took)
	}
	// Edits of a description, each followed by a call (which looks at
	// the registry): each costs little however many tools are offered.
	begun = time.Now()
	for i := range 20 {
		described := *big
		described.Description = fmt.Sprint(i)
		reg.set(map[string]*registry.Server{"big": &described, "ok": {Command: fakeBin, Args: []string{"ok"}, Lifecycle: registry.Persistent}})
		if res := callTool(t, cs, "ok__echo", map[string]any{"message": "x"}); res.IsError {
			t.Fatal(resultText(res))
		}
	}
	t.Logf("20 registry edits and calls took %s", time.Since(begun))
	if took := time.Since(begun); took > 5*time.Second {
		t.Errorf("20 registry edits and calls took %s with 10,000 tools offered", took)
	}
}

// An edited entry's tools stay offered while its list is read again, but
// go when the edited entry cannot list.
func TestAggregateEditToABrokenEntry(t *testing.T) {
	reg := newLive(map[string]*registry.Server{"ok": {Command: fakeBin, Args: []string{"ok"}}})
	cs, changed := connectWatching(t, newLiveService(t, reg, serviceOpts{aggregate: true, poll: 10 * time.Millisecond}))
	if listed(t, cs)["ok__echo"] == nil {
		t.Fatal("ok__echo is not offered")
	}
	reg.set(map[string]*registry.Server{"ok": {Command: "/nonexistent/server"}})
	waitFor(t, cs, changed, "ok__echo gone", func(m map[string]*mcp.Tool) bool { return m["ok__echo"] == nil })
}
