package tools_test

// Aggregate mode as clients see it (issue 27): colibri's own failures of a
// tool that declares an outputSchema, the hosted tools' _meta and icons, the
// order of tools/list, and the list_changed sent while the catalog settles.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
	"github.com/colibri-mcp/colibri-mcp/policy"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// appsServer is the listed-apps fake listing tools, after delay.
func appsServer(t *testing.T, list []map[string]any, delay time.Duration) *registry.Server {
	t.Helper()
	b, err := json.Marshal(map[string]any{"tools": list})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return &registry.Server{Command: fakeBin, Args: []string{"listed-apps"}, Env: map[string]string{
		"FAKEMCP_TOOLS_FILE": path, "FAKEMCP_LIST_DELAY_MS": strconv.FormatInt(delay.Milliseconds(), 10)}}
}

var (
	typedTool = map[string]any{
		"name":         "typed",
		"inputSchema":  map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []any{"n"}},
		"outputSchema": map[string]any{"type": "object", "properties": map[string]any{"sum": map[string]any{"type": "number"}}, "required": []any{"sum"}},
	}
	plainTool = map[string]any{"name": "plain", "inputSchema": map[string]any{"type": "object"}}
	appTool   = map[string]any{
		"name":        "show",
		"inputSchema": map[string]any{"type": "object"},
		"_meta":       map[string]any{"ui": map[string]any{"resourceUri": "ui://show/app.html"}, "vendor/x": 1.0},
		"icons":       []any{map[string]any{"src": "https://example.com/i.png", "mimeType": "image/png"}},
	}
)

// colibri's own failure of a call of a hosted tool that declares an
// outputSchema is text only: a client checks structuredContent against the
// tool's outputSchema, and would show a schema error instead of colibri's
// message. The audit line still says the kind. A tool without one keeps
// colibri_error.
func TestAggregateOwnErrorsTextOnlyForOutputSchema(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	w, err := audit.Open(auditPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, gate := range []bool{false, true} {
		h := host.New(host.Options{Timeout: 10 * time.Second, TerminateGrace: 200 * time.Millisecond})
		t.Cleanup(h.Close)
		reg := newLive(map[string]*registry.Server{"t": appsServer(t, []map[string]any{typedTool, plainTool}, 0)})
		svc := tools.New(tools.Options{Registry: reg.load, Host: h, ExternalCall: gate, Aggregate: true, RegistryPoll: -1, Audit: w})
		t.Cleanup(svc.Close)
		cs := connect(t, svc)
		if listed(t, cs)["t__typed"].OutputSchema == nil {
			t.Fatal("t__typed is offered without its outputSchema")
		}
		want := "colibri: call_disabled: "
		args := map[string]any{"n": 1}
		if gate {
			want, args = "colibri: invalid_arguments: ", map[string]any{"n": "one"}
		}
		res := callTool(t, cs, "t__typed", args)
		if !res.IsError || res.StructuredContent != nil || !strings.HasPrefix(resultText(res), want) {
			b, _ := json.Marshal(res)
			t.Errorf("gate %t: t__typed answered %s, want isError, no structuredContent, text %q…", gate, b, want)
		}
		// Without an outputSchema, the contract's colibri_error stays.
		if res := callTool(t, cs, "t__plain", nil); gate == false && errorKind(t, res) != "call_disabled" {
			t.Errorf("t__plain lost its colibri_error: %v", res.StructuredContent)
		}
		// So does call_tool's answer for the same tool.
		res = callTool(t, cs, tools.CallToolTool, map[string]any{"server": "t", "name": "typed", "arguments": args})
		if errorKind(t, res) == "" {
			t.Errorf("call_tool's failure lost its colibri_error: %v", res.StructuredContent)
		}
	}
	b, _ := os.ReadFile(auditPath)
	var kinds []string
	for line := range strings.Lines(string(b)) {
		var rec struct {
			ExposedName string `json:"exposed_name"`
			ErrorKind   string `json:"error_kind"`
		}
		json.Unmarshal([]byte(line), &rec)
		if rec.ExposedName == "t__typed" {
			kinds = append(kinds, rec.ErrorKind)
		}
	}
	if !slices.Equal(kinds, []string{"call_disabled", "invalid_arguments"}) {
		t.Errorf("audit kinds of t__typed: %v\n%s", kinds, b)
	}
}

// A call the policy denies to this caller is text only too (the tool is
// hidden from its list, but it may hold the outputSchema from elsewhere).
func TestAggregateDeniedTextOnly(t *testing.T) {
	srv := appsServer(t, []map[string]any{typedTool}, 0)
	srv.Policy = &policy.Policy{Callers: map[string]*policy.Set{"bot": {Tools: &policy.Globs{Deny: []string{"typed"}}}}}
	reg := newLive(map[string]*registry.Server{"t": srv})
	svc := newLiveService(t, reg, serviceOpts{gate: true, aggregate: true, poll: -1})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := svc.NewServer("test").Connect(reqctx.WithPrincipal(t.Context(), "bot"), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bot", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	listed(t, cs)
	res := callTool(t, cs, "t__typed", map[string]any{"n": 1})
	if !res.IsError || res.StructuredContent != nil || !strings.HasPrefix(resultText(res), "colibri: denied: ") {
		b, _ := json.Marshal(res)
		t.Errorf("t__typed answered %s", b)
	}
}

// A hosted tool's _meta (MCP Apps' ui link) and icons reach the caller.
func TestAggregateMetaAndIcons(t *testing.T) {
	reg := newLive(map[string]*registry.Server{"apps": appsServer(t, []map[string]any{appTool}, 0)})
	cs := connect(t, newLiveService(t, reg, serviceOpts{aggregate: true, poll: -1}))
	got := listed(t, cs)["apps__show"]
	if got == nil {
		t.Fatal("apps__show is not offered")
	}
	ui, _ := got.Meta["ui"].(map[string]any)
	if ui["resourceUri"] != "ui://show/app.html" || got.Meta["vendor/x"] != 1.0 {
		t.Errorf("_meta: %v", got.Meta)
	}
	if len(got.Icons) != 1 || got.Icons[0].Source != "https://example.com/i.png" {
		t.Errorf("icons: %v", got.Icons)
	}
}

// tools/list: colibri's three tools first, then the hosted ones sorted by
// exposed name, the same on every list.
func TestAggregateListOrder(t *testing.T) {
	reg := newLive(map[string]*registry.Server{
		"zeta":  appsServer(t, []map[string]any{plainTool}, 0),
		"alpha": appsServer(t, []map[string]any{plainTool, typedTool}, 0),
		"dd":    appsServer(t, []map[string]any{plainTool}, 0),
	})
	cs := connect(t, newLiveService(t, reg, serviceOpts{aggregate: true, poll: -1}))
	want := []string{tools.ServersTool, tools.ListToolsTool, tools.CallToolTool, "alpha__plain", "alpha__typed", "dd__plain", "zeta__plain"}
	for range 2 {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tool := range res.Tools {
			got = append(got, tool.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("tools/list order:\n got %v\nwant %v", got, want)
		}
	}
}

// The hosted lists read at start reach a caller that connected meanwhile
// in one notifications/tools/list_changed, not one per server: the servers
// answer one after the other, each once the one before has, and only once
// the caller is connected (a gate each).
func TestAggregateSettlesBeforeListChanged(t *testing.T) {
	order := []string{"fast", "mid", "slow"}
	servers, gates := map[string]*registry.Server{}, map[string]string{}
	for _, name := range order {
		srv := appsServer(t, []map[string]any{plainTool}, 0)
		gates[name] = filepath.Join(t.TempDir(), "gate")
		srv.Env["FAKEMCP_GATE"] = gates[name]
		servers[name] = srv
	}
	svc := newLiveService(t, newLive(servers), serviceOpts{aggregate: true, poll: -1})
	cs, changed := connectWatching(t, svc)
	for _, name := range order {
		if err := os.WriteFile(gates[name], nil, 0o644); err != nil {
			t.Fatal(err)
		}
		testwait.Eventually(t, name+"'s list to be answered", func() bool {
			_, err := os.Stat(gates[name] + ".listed")
			return err == nil
		})
	}
	waitFor(t, cs, changed, "every server's tools", func(m map[string]*mcp.Tool) bool {
		return m["fast__plain"] != nil && m["mid__plain"] != nil && m["slow__plain"] != nil
	})
	// Any further notification would have come within go-sdk's debounce
	// (10 ms) of the last change: the slow server's, already published.
	extra := 0
	deadline := time.After(300 * time.Millisecond)
	for done := false; !done; {
		select {
		case <-changed:
			extra++
		case <-deadline:
			done = true
		}
	}
	if extra > 0 {
		t.Errorf("%d more tools/list_changed after the first brought every list", extra)
	}
}

// An MCP Apps tool's ui:// resource reads through colibri, from the server
// whose tool names it, under the gate and the policy, audited; any other
// URI is not found.
func TestAggregateReadsUIResources(t *testing.T) {
	auditPath, w := tempAudit(t)
	for _, gate := range []bool{false, true} {
		h := host.New(host.Options{Timeout: 10 * time.Second, TerminateGrace: 200 * time.Millisecond})
		t.Cleanup(h.Close)
		srv := appsServer(t, []map[string]any{appTool, plainTool}, 0)
		reg := newLive(map[string]*registry.Server{"apps": srv})
		svc := tools.New(tools.Options{Registry: reg.load, Host: h, ExternalCall: gate, Aggregate: true, RegistryPoll: -1, Audit: w})
		t.Cleanup(svc.Close)
		cs := connect(t, svc)
		listed(t, cs)
		res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ui://show/app.html"})
		if !gate {
			if err == nil || !strings.Contains(err.Error(), "colibri: call_disabled: ") {
				t.Errorf("gate off: %v %v", res, err)
			}
			continue
		}
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "<html>ui://show/app.html</html>" || res.Contents[0].MIMEType != "text/html;profile=mcp-app" {
			t.Fatalf("read: %+v %v", res, err)
		}
		if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ui://nobody/names/this"}); err == nil {
			t.Error("a URI no tool names was read")
		}
		if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "file:///etc/passwd"}); err == nil {
			t.Error("a file:// URI was read")
		}
	}
	b, _ := os.ReadFile(auditPath)
	if strings.Count(string(b), `"tool":"ui://show/app.html"`) != 2 || !strings.Contains(string(b), `"error_kind":"call_disabled"`) {
		t.Errorf("audit:\n%s", b)
	}
}

// A caller that advertises the tasks extension never makes colibri offer it
// to a hosted server (go-sdk v1.8.0 would decode a task result into an
// empty success); its elicitation is offered.
func TestTaskCapableCallerNeverOffersTasksUpstream(t *testing.T) {
	reg := newLive(map[string]*registry.Server{"m": {Command: fakeBin, Args: []string{"modern-only"}}})
	svc := newLiveService(t, reg, serviceOpts{gate: true, poll: -1})
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := svc.NewServer("test").Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "tasks", Version: "1"}, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Extensions: map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "decline"}, nil
			},
		})
		cs, err := client.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		res := callTool(t, cs, tools.CallToolTool, map[string]any{"server": "m", "name": "seen"})
		got := resultText(res)
		// Either caller's elicitation is offered (and relayed: to a
		// 2026-07-28 caller by MRTR, docs/protocol.md).
		if res.IsError || strings.Contains(got, "tasks") || !strings.Contains(got, "elicitation") {
			t.Errorf("%s caller: the hosted server was offered %s", version, got)
		}
		cs.Close()
		ss.Wait()
	}
}
