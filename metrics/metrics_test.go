package metrics

import (
	"fmt"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d", rec.Code)
	}
	return rec.Body.String()
}

func TestSeries(t *testing.T) {
	yes, no := true, false
	m := New(Options{Version: "1.2.3", Commit: "abc1234", State: func() State {
		return State{Processes: 3, Servers: []ServerState{
			{Server: "demo", Warm: 1, Up: &yes}, {Server: "flaky", CircuitOpen: true, Up: &no}, {Server: "idle"}}}
	}})
	m.ToolCall("demo", "echo", "ok", "")
	m.ToolCall("demo", "echo", "ok", "")
	m.PolicyDenial("demo")
	m.AuditWriteError()
	m.Retry("flaky", "initialize")
	m.ServerOperation("tools/call", 20*time.Millisecond, "")
	m.ServerOperation("made/up", time.Millisecond, "")
	m.ServerOperation("notifications/initialized", time.Millisecond, "")
	m.ClientOperation("demo", "tools/call", 3*time.Second, "tool_error")
	got := scrape(t, m)
	for _, want := range []string{
		`colibri_tool_calls_total{error_kind="",outcome="ok",server="demo",tool="echo"} 2`,
		`colibri_policy_denials_total{server="demo"} 1`,
		`colibri_audit_write_errors_total 1`,
		`colibri_retries_total{phase="initialize",server="flaky"} 1`,
		`mcp_server_operation_duration_seconds_bucket{error_type="",mcp_method_name="tools/call",le="0.02"} 1`,
		`mcp_server_operation_duration_seconds_count{error_type="",mcp_method_name="_other"} 1`,
		`mcp_client_operation_duration_seconds_count{error_type="tool_error",mcp_method_name="tools/call",server="demo"} 1`,
		`colibri_hosted_processes 3`,
		`colibri_warm_sessions{server="demo"} 1`,
		`colibri_circuit_open{server="flaky"} 1`,
		`colibri_circuit_open{server="demo"} 0`,
		`colibri_upstream_up{server="demo"} 1`,
		`colibri_upstream_up{server="flaky"} 0`,
		`colibri_build_info{commit="abc1234",goversion="` + runtime.Version() + `",version="1.2.3"} 1`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("the scrape lacks %s", want)
		}
	}
	if strings.Contains(got, `colibri_upstream_up{server="idle"}`) || strings.Contains(got, "made/up") || strings.Contains(got, "notifications") {
		t.Errorf("scrape:\n%s", got)
	}
	// Its own registry, with client_golang's Go runtime and process
	// collectors on it (docs/operations.md#metrics), and nothing of its own put
	// on the library's global one.
	if !strings.Contains(got, "go_goroutines ") || !strings.Contains(got, "process_cpu_seconds_total ") {
		t.Error("the scrape lacks the Go runtime or process collectors")
	}
	for _, want := range []string{"colibri_registry_valid 0", "colibri_registry_errors_total 0", "colibri_http_sessions 0"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("the scrape lacks %s", want)
		}
	}
	if mfs, _ := prometheus.DefaultGatherer.Gather(); len(mfs) > 0 {
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "colibri_") || strings.HasPrefix(mf.GetName(), "mcp_") {
				t.Errorf("%s is on the global registry", mf.GetName())
			}
		}
	}
}

// Metrics off: every method of a nil *Metrics does nothing.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.ToolCall("a", "b", "ok", "")
	m.PolicyDenial("a")
	m.AuditWriteError()
	m.Retry("a", "call")
	m.ServerOperation("ping", 0, "")
	m.ClientOperation("a", "ping", 0, "")
}

// A hosted server cannot grow the series without bound: not by listing
// (and being called by) ever more tools, nor by answering with error codes
// of its own choosing.
func TestLabelsStayBounded(t *testing.T) {
	m := New(Options{Version: "test"})
	for i := range 10 * MaxToolsPerServer {
		m.ToolCall("big", fmt.Sprintf("tool_%05d", i), "ok", "")
		m.ClientOperation("big", "tools/call", time.Millisecond, strconv.Itoa(-i*7919))
	}
	m.ToolCall("small", "echo", "ok", "")
	m.ClientOperation("big", "tools/call", time.Millisecond, "-32601")
	m.ClientOperation("big", "tools/call", time.Millisecond, "timeout")
	m.ClientOperation("big", "tools/call", time.Millisecond, "9223372036854775807")
	m.ServerOperation("tools/call", time.Millisecond, "-1")
	got := scrape(t, m)
	if n := strings.Count(got, `colibri_tool_calls_total{error_kind="",outcome="ok",server="big",tool="tool_`); n != MaxToolsPerServer {
		t.Errorf("%d tool series for one server, want %d", n, MaxToolsPerServer)
	}
	for _, want := range []string{
		fmt.Sprintf(`colibri_tool_calls_total{error_kind="",outcome="ok",server="big",tool="_other"} %d`, 9*MaxToolsPerServer),
		`colibri_tool_calls_total{error_kind="",outcome="ok",server="big",tool="tool_00000"} 1`,
		`colibri_tool_calls_total{error_kind="",outcome="ok",server="small",tool="echo"} 1`, // another server's own cap
		`mcp_client_operation_duration_seconds_count{error_type="-32601",mcp_method_name="tools/call",server="big"} 1`,
		`mcp_client_operation_duration_seconds_count{error_type="timeout",mcp_method_name="tools/call",server="big"} 1`,
		`mcp_server_operation_duration_seconds_count{error_type="_other",mcp_method_name="tools/call"} 1`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("the scrape lacks %s", want)
		}
	}
	// -32601, timeout and _other: three error types in all.
	if n := strings.Count(got, `mcp_client_operation_duration_seconds_count{`); n != 3 {
		t.Errorf("%d client operation series, want 3:\n%s", n, got)
	}
}

func TestErrorType(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "tool_error": "tool_error", "invalid_arguments": "invalid_arguments", "-32602": "-32602",
		"-32042": "-32042", "-31999": Other, "42": Other, "Bad Word": Other, "a\nb": Other, "-32601x": Other,
	} {
		if got := ErrorType(in); got != want {
			t.Errorf("ErrorType(%q) = %q, want %q", in, got, want)
		}
	}
}

// The egress proxy's counters, per server.
func TestEgressCounters(t *testing.T) {
	m := New(Options{})
	m.EgressRefused("gh")
	m.EgressRefused("gh")
	m.EgressConnection("gh")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`colibri_egress_refused_total{server="gh"} 2`, `colibri_egress_connections_total{server="gh"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
