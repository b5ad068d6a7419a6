package metrics

import (
	"net/http/httptest"
	"runtime"
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
	// Its own registry: nothing of the client library's global one (no
	// go_* or process_* series), and nothing of its own put there.
	if strings.Contains(got, "go_goroutines") || strings.Contains(got, "process_") {
		t.Error("the scrape holds the default registry's collectors")
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
