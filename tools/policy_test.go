package tools_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/policy"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// connectAs serves svc in-process to a caller known as principal.
func connectAs(t *testing.T, svc *tools.Service, who string) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := svc.NewServer("test").Connect(reqctx.WithPrincipal(t.Context(), who), st, nil)
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

// policyRegistry is a registry whose one server, "ann", is the annotated
// fake, under the top-level policy global and the server policy local (JSON,
// or ""), with folders where the fake records every process it starts
// (pids) and every call it answers (calls).
func policyRegistry(t *testing.T, global, local string) (reg *registry.Registry, pids, calls string) {
	t.Helper()
	pids, calls = t.TempDir(), t.TempDir()
	entry := map[string]any{"command": fakeBin, "args": []string{"annotated"},
		"env": map[string]string{"FAKEMCP_PIDS": pids, "FAKEMCP_CALLS": calls}}
	if local != "" {
		entry["policy"] = json.RawMessage(local)
	}
	doc := map[string]any{"servers": map[string]any{"ann": entry}}
	if global != "" {
		doc["policy"] = json.RawMessage(global)
	}
	b, _ := json.Marshal(doc)
	reg, err := registry.Parse(strings.NewReader(string(b)), "")
	if err != nil {
		t.Fatal(err)
	}
	return reg, pids, calls
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func listedNames(t *testing.T, cs *mcp.ClientSession, server string) []string {
	t.Helper()
	res := callTool(t, cs, tools.ListToolsTool, map[string]any{"server": server})
	b, _ := json.Marshal(res.StructuredContent)
	var out tools.ListToolsResult
	if res.IsError || json.Unmarshal(b, &out) != nil || len(out.Servers) != 1 {
		t.Fatalf("list_tools %s: %s", server, b)
	}
	var names []string
	for _, tl := range out.Servers[0].Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// The policy hides what it denies from list_tools, per caller, and refuses a
// call to it with kind denied and a message that says only that, before
// any process is started.
func TestPolicyHidesAndRefusesBeforeStarting(t *testing.T) {
	reg, pids, calls := policyRegistry(t, `{"callers": {"ci-bot": {"tools": {"allow": ["search"]}}}}`, `{"tools": {"deny": ["delete_*"]}}`)
	svc := newService(t, true, reg)

	// Refused by name: before any list is known, nothing starts.
	cs := connectAs(t, svc, reqctx.Stdio)
	res := callTool(t, cs, tools.CallToolTool, map[string]any{"server": "ann", "name": "delete_file", "arguments": map[string]any{"path": "/etc"}})
	if kind := errorKind(t, res); kind != "denied" {
		t.Fatalf("kind %q: %s", kind, resultText(res))
	}
	if got, want := resultText(res), "colibri: denied: policy denies delete_file on ann for this caller"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if started := entries(t, pids); len(started) != 0 {
		t.Errorf("a denied call started %d processes", len(started))
	}

	if got := strings.Join(listedNames(t, cs, "ann"), ","); got != "meta,read_file,search" {
		t.Errorf("stdio sees %s", got)
	}
	bot := connectAs(t, svc, "ci-bot")
	if got := strings.Join(listedNames(t, bot, "ann"), ","); got != "search" {
		t.Errorf("ci-bot sees %s", got)
	}
	before := len(entries(t, pids))
	res = callTool(t, bot, tools.CallToolTool, map[string]any{"server": "ann", "name": "read_file"})
	if kind := errorKind(t, res); kind != "denied" {
		t.Fatalf("ci-bot calling read_file: kind %q: %s", kind, resultText(res))
	}
	if after := len(entries(t, pids)); after != before {
		t.Errorf("a denied call started %d processes", after-before)
	}
	res = callTool(t, bot, tools.CallToolTool, map[string]any{"server": "ann", "name": "search"})
	if res.IsError || resultText(res) != "done" {
		t.Errorf("ci-bot calling search: %s", resultText(res))
	}
	// An unknown tool's hint names only the tools the caller may see.
	res = callTool(t, bot, tools.CallToolTool, map[string]any{"server": "ann", "name": "serch"})
	if kind := errorKind(t, res); kind != "denied" {
		t.Errorf("ci-bot calling a tool outside its allow list: kind %q", kind)
	}
	res = callTool(t, cs, tools.CallToolTool, map[string]any{"server": "ann", "name": "nope"})
	if text := resultText(res); errorKind(t, res) != "unknown_tool" || strings.Contains(text, "delete_file") || !strings.Contains(text, "read_file") {
		t.Errorf("unknown tool: %s", text)
	}
	if got := strings.Join(entries(t, calls), ","); got != "search" {
		t.Errorf("calls the fake answered: %s, want search alone", got)
	}
}

// A rule on annotations: with the list known, a denied call starts
// nothing; with no list known, colibri may start the server to learn the
// annotations (listing is allowed), but never sends the call.
func TestPolicyOnAnnotations(t *testing.T) {
	const global = `{"deny_destructive": true}`
	for _, lifecycle := range []string{registry.PerRequest, registry.Persistent} {
		t.Run("list unknown, "+lifecycle, func(t *testing.T) {
			reg, _, calls := policyRegistry(t, global, "")
			reg.Servers["ann"].Lifecycle = lifecycle
			// With arguments that its inputSchema refuses, or none: the
			// policy judges first, so that the caller learns nothing of a
			// tool it may not see (not that it exists, nor what it takes).
			for _, args := range []any{nil, map[string]any{"path": 42}} {
				cs := connectAs(t, newService(t, true, reg), reqctx.Stdio) // no list known yet
				res := callTool(t, cs, tools.CallToolTool, map[string]any{"server": "ann", "name": "delete_file", "arguments": args})
				if got, want := resultText(res), "colibri: denied: policy denies delete_file on ann for this caller"; got != want {
					t.Errorf("arguments %v: %q, want %q", args, got, want)
				}
			}
			if got := entries(t, calls); len(got) != 0 {
				t.Errorf("the hosted server was called: %v", got)
			}
		})
	}
	t.Run("list known", func(t *testing.T) {
		reg, pids, calls := policyRegistry(t, global, "")
		cs := connectAs(t, newService(t, true, reg), reqctx.Stdio)
		if got := strings.Join(listedNames(t, cs, "ann"), ","); got != "meta,read_file,search" {
			t.Errorf("listed %s", got)
		}
		before := len(entries(t, pids))
		res := callTool(t, cs, tools.CallToolTool, map[string]any{"server": "ann", "name": "delete_file"})
		if kind := errorKind(t, res); kind != "denied" {
			t.Fatalf("kind %q: %s", kind, resultText(res))
		}
		if after := len(entries(t, pids)); after != before {
			t.Errorf("a denied call started %d processes though the list was known", after-before)
		}
		res = callTool(t, cs, tools.CallToolTool, map[string]any{"server": "ann", "name": "read_file"})
		if res.IsError {
			t.Errorf("read_file: %s", resultText(res))
		}
		if got := strings.Join(entries(t, calls), ","); got != "read_file" {
			t.Errorf("calls answered: %s", got)
		}
	})
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
