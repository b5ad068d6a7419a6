package tools_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/metrics"
	"github.com/colibri-mcp/colibri-mcp/policy"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// The fields of docs/operations.md#audit-log, and no others.
var auditFields = []string{"ts", "id", "principal", "transport", "client", "server", "tool", "exposed_name", "policy",
	"args", "outcome", "error_kind", "phase", "http_status", "attempts", "duration_ms", "result_bytes", "instance", "chain", "prev"}

type controlled struct {
	svc     *tools.Service
	logs    *syncbuf.Buffer
	path    string // the audit log
	metrics *metrics.Metrics
}

// newControlled is a Service with an audit log (keyed), metrics and a debug
// log that carries request ids, as cmd wires them.
func newControlled(t *testing.T, gate bool, reg *registry.Registry) *controlled {
	t.Helper()
	c := &controlled{logs: &syncbuf.Buffer{}, path: filepath.Join(t.TempDir(), "audit.log")}
	w, err := audit.Open(c.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	log := slog.New(reqctx.Handler(slog.NewTextHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	c.metrics = metrics.New(metrics.Options{Version: "test"})
	h := host.New(host.Options{Timeout: 10 * time.Second, TerminateGrace: 200 * time.Millisecond, Logger: log})
	t.Cleanup(h.Close)
	c.svc = tools.New(tools.Options{
		Registry:     func() (*registry.Registry, error) { return reg, nil },
		Host:         h,
		ExternalCall: gate,
		Logger:       log,
		Audit:        w,
		Digester:     audit.NewDigester([]byte("test-key")),
		Metrics:      c.metrics,
	})
	return c
}

func (c *controlled) lines(t *testing.T) []map[string]any {
	t.Helper()
	f, err := os.Open(c.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("an audit line that is not JSON: %s", sc.Text())
		}
		for k := range m {
			if !slices.Contains(auditFields, k) {
				t.Errorf("an audit line has the field %q, which section 10 does not name: %s", k, sc.Text())
			}
		}
		out = append(out, m)
	}
	return out
}

func (c *controlled) scrape(t *testing.T) string {
	t.Helper()
	rec := httptest.NewRecorder()
	c.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// Every call gets one audit line, whatever became of it, with the
// contract's fields; the arguments only as a digest; its id on the log
// lines of that request.
func TestAuditOneLinePerCall(t *testing.T) {
	reg, _, _ := policyRegistry(t, "", `{"tools": {"deny": ["delete_*"]}}`)
	reg.Servers["ok"] = &registry.Server{Name: "ok", Command: fakeBin, Args: []string{"ok"}}
	c := newControlled(t, true, reg)
	cs := connectAs(t, c.svc, reqctx.Stdio)
	const secret = "distinctive-argument-value-7f3a"

	type want struct{ outcome, kind, server, tool string }
	var wants []want
	callWant := func(args map[string]any, w want) {
		t.Helper()
		callTool(t, cs, tools.CallToolTool, args)
		wants = append(wants, w)
	}
	callWant(map[string]any{"server": "ann", "name": "read_file", "arguments": map[string]any{"path": secret}}, want{"ok", "", "ann", "read_file"})
	callWant(map[string]any{"server": "ann", "name": "delete_file", "arguments": map[string]any{"path": secret}}, want{"denied", "denied", "ann", "delete_file"})
	callWant(map[string]any{"server": "nope", "name": "x", "arguments": map[string]any{"v": secret}}, want{"error", "unknown_server", "nope", "x"})
	callWant(map[string]any{"server": "ann", "name": "read_file", "arguments": secret}, want{"error", "invalid_arguments", "ann", "read_file"})
	callWant(map[string]any{"server": "ok", "name": "echo", "arguments": map[string]any{"message": 42}}, want{"error", "invalid_arguments", "ok", "echo"})
	// Not a call of a hosted tool: no line.
	callTool(t, cs, tools.ServersTool, nil)

	// A cancelled call: the caller gives up once the tool runs.
	started := filepath.Join(t.TempDir(), "started")
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		waitFile(t, started)
		cancel()
	}()
	cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.CallToolTool, Arguments: map[string]any{
		"server": "ok", "name": "sleep", "arguments": map[string]any{"ms": 60000, "started": started}}})
	wants = append(wants, want{"cancelled", "cancelled", "ok", "sleep"})

	lines := waitLines(t, c, len(wants))
	ids := map[string]bool{}
	for i, l := range lines {
		w := wants[i]
		if l["outcome"] != w.outcome || str(l["error_kind"]) != w.kind || l["server"] != w.server || l["tool"] != w.tool {
			t.Errorf("line %d: %v, want %+v", i, l, w)
		}
		if l["principal"] != "stdio" || l["transport"] != "stdio" {
			t.Errorf("line %d: principal %v transport %v", i, l["principal"], l["transport"])
		}
		if cl, _ := l["client"].(map[string]any); cl["name"] != "in-process" || cl["version"] != "1" {
			t.Errorf("line %d: client %v", i, l["client"])
		}
		args, _ := l["args"].(map[string]any)
		if d, _ := args["digest"].(string); !regexp.MustCompile(`^hmac-sha256:[0-9a-f]{64}$`).MatchString(d) || args["bytes"] == nil {
			t.Errorf("line %d: args %v", i, l["args"])
		}
		if ts, err := time.Parse(time.RFC3339Nano, str(l["ts"])); err != nil || ts.Location() != time.UTC {
			t.Errorf("line %d: ts %v", i, l["ts"])
		}
		if _, ok := l["duration_ms"].(float64); !ok {
			t.Errorf("line %d: no duration_ms", i)
		}
		id := str(l["id"])
		if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(id) || ids[id] {
			t.Errorf("line %d: id %q (unique 16 hex digits wanted)", i, id)
		}
		ids[id] = true
		if !strings.Contains(c.logs.String(), "request_id="+id) {
			t.Errorf("line %d: no log line carries request_id=%s", i, id)
		}
	}
	if p, _ := lines[0]["policy"].(map[string]any); p["decision"] != "allow" {
		t.Errorf("an allowed call's policy: %v", lines[0]["policy"])
	}
	if p, _ := lines[1]["policy"].(map[string]any); p["decision"] != "deny" || p["rule"] != `server:ann tools.deny "delete_*"` {
		t.Errorf("a denied call's policy: %v", lines[1]["policy"])
	}
	if _, ok := lines[0]["result_bytes"].(float64); !ok {
		t.Errorf("a successful call has no result_bytes: %v", lines[0])
	}
	b, _ := os.ReadFile(c.path)
	if strings.Contains(string(b), secret) {
		t.Errorf("the audit log holds an argument value:\n%s", b)
	}
	// The same arguments, the same digest; other arguments, another.
	d := func(i int) string { return lines[i]["args"].(map[string]any)["digest"].(string) }
	if d(0) != d(1) || d(0) == d(2) {
		t.Errorf("digests: %s %s %s", d(0), d(1), d(2))
	}

	// Metrics count exactly these calls, and no label holds what a caller
	// made up.
	scrape := c.scrape(t)
	for _, series := range []string{
		`colibri_tool_calls_total{error_kind="",outcome="ok",server="ann",tool="read_file"} 1`,
		`colibri_tool_calls_total{error_kind="denied",outcome="denied",server="ann",tool="delete_file"} 1`,
		`colibri_tool_calls_total{error_kind="unknown_server",outcome="error",server="_other",tool="_other"} 1`,
		`colibri_tool_calls_total{error_kind="invalid_arguments",outcome="error",server="ann",tool="read_file"} 1`,
		`colibri_tool_calls_total{error_kind="cancelled",outcome="cancelled",server="ok",tool="sleep"} 1`,
		`colibri_policy_denials_total{server="ann"} 1`,
		`mcp_server_operation_duration_seconds_count{error_type="",mcp_method_name="tools/call"} 2`, // read_file and servers
		`mcp_server_operation_duration_seconds_count{error_type="denied",mcp_method_name="tools/call"} 1`,
	} {
		if !strings.Contains(scrape, series+"\n") {
			t.Errorf("the scrape lacks %s", series)
		}
	}
	if strings.Contains(scrape, "nope") || strings.Contains(scrape, secret) || strings.Contains(scrape, "stdio") {
		t.Errorf("a label holds a caller's words or a principal:\n%s", scrape)
	}
}

// The gate's refusal is recorded too: it happens inside the outermost layer.
func TestAuditRecordsTheGatesRefusal(t *testing.T) {
	c := newControlled(t, false, fakeRegistry())
	cs := connectAs(t, c.svc, "alice")
	callTool(t, cs, tools.CallToolTool, map[string]any{"server": "ok", "name": "echo"})
	lines := c.lines(t)
	if len(lines) != 1 || lines[0]["outcome"] != "error" || lines[0]["error_kind"] != "call_disabled" ||
		lines[0]["principal"] != "alice" || lines[0]["transport"] != "http" {
		t.Errorf("lines: %v", lines)
	}
	if lines[0]["policy"] != nil {
		t.Errorf("a refusal before any policy decision has one: %v", lines[0]["policy"])
	}
}

// A caller's W3C trace context in _meta reaches the hosted request; the
// rest of its _meta does not.
func TestTraceContextReachesTheHostedRequest(t *testing.T) {
	reg, _, _ := policyRegistry(t, "", "")
	cs := connectAs(t, newService(t, true, reg), reqctx.Stdio)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{
		Meta: mcp.Meta{"traceparent": tp, "tracestate": "congo=t61rcWkgMzE", "baggage": "userId=alice", "private": "not-passed"},
		Name: tools.CallToolTool, Arguments: map[string]any{"server": "ann", "name": "meta"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(resultText(res)), &got); err != nil {
		t.Fatalf("meta: %s", resultText(res))
	}
	if got["traceparent"] != tp || got["tracestate"] != "congo=t61rcWkgMzE" || got["baggage"] != "userId=alice" || got["private"] != nil {
		t.Errorf("the hosted request's _meta: %v", got)
	}
}

func str(v any) string { s, _ := v.(string); return s }

// waitLines waits, up to a deadline, until the audit log holds n lines.
func waitLines(t *testing.T, c *controlled, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		lines := c.lines(t)
		if len(lines) >= n {
			if len(lines) > n {
				t.Errorf("%d audit lines, want %d", len(lines), n)
			}
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d audit lines after 20 s, want %d", len(lines), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitFile(t *testing.T, path string) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("%s never appeared", path)
}

// Every way a call can end writes exactly one audit line, and writes it
// before the answer: the line is in the file the moment the caller has its
// answer. No line holds a secret, wherever the secret was: in the hosted
// server's environment, in the arguments, in an error message the hosted
// server wrote, in its stderr. Afterwards no hosted process is left, and the
// gauge says so.
func TestAuditEveryOutcomeBeforeItsAnswer(t *testing.T) {
	const secret = "s3cret-9d2e71"
	env := map[string]string{"API_KEY": secret, "TOKEN": secret}
	reg := &registry.Registry{Servers: map[string]*registry.Server{
		"ok": {Name: "ok", Command: fakeBin, Args: []string{"ok"}, Env: env},
		// The timeout of its own: a 1 MiB answer of ok's (too_large) took
		// longer than 300 ms on a loaded machine, and failed timeout.
		"hangs": {Name: "hangs", Command: fakeBin, Args: []string{"ok"}, Env: env, CallTimeout: 300},
		"leaky": {Name: "leaky", Command: fakeBin, Args: []string{"review-leak-call"}, Env: env},
		"dying": {Name: "dying", Command: fakeBin, Args: []string{"review-leak-split"}, Env: env},
		"ann": {Name: "ann", Command: fakeBin, Args: []string{"annotated"}, Env: env,
			Policy: &policy.Policy{Set: policy.Set{Tools: &policy.Globs{Deny: []string{"delete_*"}}}}},
	}}
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	logs := &syncbuf.Buffer{}
	log := slog.New(reqctx.Handler(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	h := host.New(host.Options{Timeout: 10 * time.Second, TerminateGrace: 200 * time.Millisecond, Logger: log,
		MaxResultBytes: 64 << 10, Retries: 1})
	t.Cleanup(h.Close)
	m := metrics.New(metrics.Options{Version: "test", State: func() metrics.State { return metrics.State{Processes: h.Processes()} }})
	opts := tools.Options{Registry: func() (*registry.Registry, error) { return reg, nil }, Host: h, Logger: log,
		Audit: w, Digester: audit.NewDigester([]byte("k")), Metrics: m}
	c := &controlled{logs: logs, path: path, metrics: m}
	off := tools.New(opts)
	opts.ExternalCall = true
	on := tools.New(opts)
	cs, gateOff := connectAs(t, on, "alice"), connectAs(t, off, "alice")

	n := 0
	for _, tc := range []struct {
		cs                   *mcp.ClientSession
		args                 map[string]any
		outcome, kind, phase string
	}{
		{gateOff, map[string]any{"server": "ok", "name": "echo", "arguments": map[string]any{"message": secret}}, "error", "call_disabled", ""},
		{cs, map[string]any{"server": "nope", "name": "echo", "arguments": map[string]any{"message": secret}}, "error", "unknown_server", ""},
		{cs, map[string]any{"server": "ok", "name": "echo", "arguments": secret}, "error", "invalid_arguments", ""},
		{cs, map[string]any{"server": "ok", "name": "echo", "arguments": map[string]any{"message": 7, "k": secret}}, "error", "invalid_arguments", "call"},
		{cs, map[string]any{"server": "ann", "name": "delete_file", "arguments": map[string]any{"path": secret}}, "denied", "denied", ""},
		{cs, map[string]any{"server": "ok", "name": "nosuch", "arguments": map[string]any{"k": secret}}, "error", "unknown_tool", "list"},
		{cs, map[string]any{"server": "hangs", "name": "hang", "arguments": map[string]any{}}, "error", "timeout", "call"},
		{cs, map[string]any{"server": "ok", "name": "crash", "arguments": map[string]any{}}, "error", "crashed", "call"},
		{cs, map[string]any{"server": "ok", "name": "big", "arguments": map[string]any{"bytes": 1 << 20}}, "error", "too_large", "call"},
		{cs, map[string]any{"server": "dying", "name": "any", "arguments": map[string]any{"k": secret}}, "error", "handshake", "initialize"},
		{cs, map[string]any{"server": "leaky", "name": "any", "arguments": map[string]any{"k": secret}}, "tool_error", "", ""},
		{cs, map[string]any{"server": "ok", "name": "echo", "arguments": map[string]any{"message": secret}}, "ok", "", ""},
	} {
		res := callTool(t, tc.cs, tools.CallToolTool, tc.args)
		n++
		// Read at once, on the answer: the line must already be there.
		lines := c.lines(t)
		if len(lines) != n {
			t.Fatalf("%v: %d audit lines on receiving the answer, want %d (%s)", tc.args, len(lines), n, resultText(res))
		}
		l := lines[n-1]
		if l["outcome"] != tc.outcome || str(l["error_kind"]) != tc.kind || str(l["phase"]) != tc.phase ||
			l["server"] != tc.args["server"] || l["tool"] != tc.args["name"] || l["principal"] != "alice" {
			t.Errorf("%v: line %v, want outcome %s kind %q phase %q (%s)", tc.args, l, tc.outcome, tc.kind, tc.phase, resultText(res))
		}
		if _, ok := l["result_bytes"]; ok != (tc.outcome == "ok" || tc.outcome == "tool_error") {
			t.Errorf("%v: result_bytes %v", tc.args, l["result_bytes"])
		}
	}

	// Cancelled by the caller, who then gets no answer to wait for.
	started := filepath.Join(t.TempDir(), "started")
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		waitFile(t, started)
		cancel()
	}()
	cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.CallToolTool, Arguments: map[string]any{
		"server": "ok", "name": "sleep", "arguments": map[string]any{"ms": 60000, "started": started}}})
	n++
	if l := waitLines(t, c, n)[n-1]; l["outcome"] != "cancelled" || l["error_kind"] != "cancelled" {
		t.Errorf("the cancelled call: %v", l)
	}

	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), secret) {
		t.Errorf("the audit log holds the secret:\n%s", b)
	}
	for _, l := range c.lines(t) {
		if !strings.Contains(logs.String(), "request_id="+str(l["id"])) {
			t.Errorf("no log line carries the id of %v", l)
		}
	}
	scrape := c.scrape(t)
	calls := 0
	for _, line := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(line, "colibri_tool_calls_total{") {
			v, _ := strconv.Atoi(line[strings.LastIndex(line, " ")+1:])
			calls += v
		}
	}
	if calls != n || strings.Contains(scrape, secret) || strings.Contains(scrape, "alice") ||
		strings.Contains(scrape, "nope") || strings.Contains(scrape, "nosuch") { // names a caller made up are _other
		t.Errorf("colibri_tool_calls_total sums to %d, want %d:\n%s", calls, n, scrape)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(c.scrape(t), "colibri_hosted_processes 0\n") {
		if time.Now().After(deadline) {
			t.Fatalf("hosted processes left after every call ended:\n%s", c.scrape(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An audit line that cannot be written is logged (with the request's id)
// and counted; the call still answers.
func TestAuditWriteFailureIsLoggedAndCounted(t *testing.T) {
	reg := fakeRegistry()
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	log := slog.New(reqctx.Handler(slog.NewTextHandler(logs, nil)))
	h := host.New(host.Options{Timeout: 10 * time.Second, TerminateGrace: 200 * time.Millisecond, Logger: log})
	t.Cleanup(h.Close)
	m := metrics.New(metrics.Options{Version: "test"})
	svc := tools.New(tools.Options{Registry: func() (*registry.Registry, error) { return reg, nil }, Host: h, Logger: log,
		ExternalCall: true, Audit: w, Metrics: m})
	cs := connectAs(t, svc, "alice")
	w.Close() // every write fails from now on, as on a full disk
	res := callTool(t, cs, tools.CallToolTool, map[string]any{"server": "ok", "name": "echo", "arguments": map[string]any{"message": "hi"}})
	if res.IsError || resultText(res) != "Echo: hi" {
		t.Fatalf("the call did not answer: %s", resultText(res))
	}
	if !regexp.MustCompile(`level=ERROR msg="audit record lost" err=.* request_id=[0-9a-f]{16}`).MatchString(logs.String()) {
		t.Errorf("no error logged for the lost line:\n%s", logs.String())
	}
	c := &controlled{metrics: m}
	if scrape := c.scrape(t); !strings.Contains(scrape, "colibri_audit_write_errors_total 1\n") {
		t.Errorf("the lost line is not counted:\n%s", scrape)
	}
}

// The host's lines about a request carry its id, once: those of the
// per-request process it starts, and the start of a warm server it causes.
func TestHostLinesCarryTheRequestID(t *testing.T) {
	for _, lifecycle := range []string{registry.PerRequest, registry.Persistent} {
		t.Run(lifecycle, func(t *testing.T) {
			reg := fakeRegistry()
			reg.Servers["ok"].Lifecycle = lifecycle
			c := newControlled(t, true, reg)
			cs := connectAs(t, c.svc, "alice")
			callTool(t, cs, tools.CallToolTool, map[string]any{"server": "ok", "name": "echo", "arguments": map[string]any{"message": "hi"}})
			id := str(c.lines(t)[0]["id"])
			want := []string{`msg=started server=ok pid=\d+ .*`}
			if lifecycle == registry.Persistent {
				want = append(want, `msg="warm server started" server=ok pid=\d+ .*`)
			}
			for _, re := range want {
				line := regexp.MustCompile(`(?m)^.*` + re + `$`).FindString(c.logs.String())
				if !strings.Contains(line, "request_id="+id) || strings.Count(line, "request_id=") != 1 {
					t.Errorf("%s: want one request_id=%s on the line %q; the log:\n%s", re, id, line, c.logs.String())
				}
			}
		})
	}
}
