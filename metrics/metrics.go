// Package metrics is colibri's Prometheus metrics (docs/operations.md#metrics),
// on a registry of its own (never the client library's global one),
// served by Handler for a scraper.
//
//	m := metrics.New(metrics.Options{Version: "1.2.0", Commit: "abc1234", State: state})
//	m.ToolCall("demo", "echo", "ok", "")
//	http.Handle("/metrics", m.Handler())
//
// Label values are the caller's to keep bounded: a server or tool name only
// from the registry and the hosted servers' own lists, anything else Other.
// The package bounds what a hosted server could still grow: at most
// MaxToolsPerServer tool names per server, and only known JSON-RPC codes as
// error types. No label ever holds a principal, a session id or an argument. Every method
// of a nil *Metrics does nothing, so that metrics can be off.
package metrics

import (
	"net/http"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Other is the label value for anything not named by the registry or a
// hosted list (an unknown server, a tool no list holds, a method colibri
// does not know).
const Other = "_other"

// MaxToolsPerServer bounds the tool label values of one server: a hosted
// server that lists 100,000 tools, or renames its tools all day, must not
// make a series of each. The first MaxToolsPerServer tools of a server to be
// called keep their names, until colibri restarts; the rest are Other.
const MaxToolsPerServer = 200

// Options configure the metrics.
type Options struct {
	Version, Commit string // colibri_build_info
	// State, when set, is read at each scrape for the gauges of the
	// registry's servers.
	State func() State
}

// State is what the gauges show, read at each scrape.
type State struct {
	Processes int // hosted processes alive
	Servers   []ServerState
}

// ServerState is one registry server's gauges.
type ServerState struct {
	Server      string
	Warm        int   // warm sessions up
	CircuitOpen bool  // failing fast after repeated failures
	Up          *bool // its last start succeeded; nil until one was tried
	// Spares is set for a server with "spare": its spare processes ready,
	// and the requests that found one (hits) or not (misses) so far.
	Spares *SpareState
}

// SpareState is a server's spare processes (docs/registry.md#spare-processes-ready-before-the-request).
type SpareState struct {
	Ready        int
	Hits, Misses uint64
}

// Metrics holds colibri's series.
type Metrics struct {
	reg         *prometheus.Registry
	calls       *prometheus.CounterVec
	clientOps   *prometheus.HistogramVec
	serverOps   *prometheus.HistogramVec
	retries     *prometheus.CounterVec
	denials     *prometheus.CounterVec
	pinChanges  *prometheus.CounterVec
	egressNo    *prometheus.CounterVec
	egressConns *prometheus.CounterVec
	pinFlags    *prometheus.CounterVec
	auditErrors prometheus.Counter
	chainLines  atomic.Pointer[func() int64]
	processes   *prometheus.Desc
	warm        *prometheus.Desc
	circuit     *prometheus.Desc
	up          *prometheus.Desc
	spares      *prometheus.Desc
	spareHits   *prometheus.Desc
	spareMisses *prometheus.Desc
	state       atomic.Pointer[func() State]
	handler     http.Handler

	registryValid  prometheus.Gauge
	registryErrors prometheus.Counter
	refused        *prometheus.CounterVec
	sessions       atomic.Pointer[func() int]

	mu    sync.Mutex
	tools map[string]map[string]bool // server → the tool names that are labels
}

// durationBuckets are the MCP semantic conventions' advice for operation
// durations, in seconds.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// New builds the series on a registry of their own.
func New(o Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "colibri_tool_calls_total",
			Help: "Calls of hosted tools, by outcome (ok, tool_error, error, denied, cancelled) and colibri error kind."},
			[]string{"server", "tool", "outcome", "error_kind"}),
		clientOps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcp_client_operation_duration_seconds",
			Help: "Requests colibri sent hosted servers (colibri → hosted), by method and error type.", Buckets: durationBuckets},
			[]string{"mcp_method_name", "server", "error_type"}),
		serverOps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcp_server_operation_duration_seconds",
			Help: "Requests callers sent colibri (caller → colibri), by method and error type.", Buckets: durationBuckets},
			[]string{"mcp_method_name", "error_type"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "colibri_retries_total",
			Help: "Retries of a phase (spawn, initialize, list, call) after a transient failure."}, []string{"server", "phase"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "colibri_policy_denials_total",
			Help: "Calls the policy refused."}, []string{"server"}),
		pinChanges: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "colibri_tool_changes_total",
			Help: "Changes of hosted tool definitions against their pins: each first sighting, and each call refused for one."}, []string{"server"}),
		egressNo: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "colibri_egress_refused_total",
			Help: "Connections the egress proxy of a sandbox's net list refused (each is also logged at warn)."}, []string{"server"}),
		egressConns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "colibri_egress_connections_total",
			Help: "Connections the egress proxy of a sandbox's net list made."}, []string{"server"}),
		pinFlags: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "colibri_pin_flags_total",
			Help: "Signs of tool poisoning the pin scan found, each when the definition was first recorded (docs/security.md)."}, []string{"server", "flag"}),
		auditErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "colibri_audit_write_errors_total",
			Help: "Audit records that could not be written (each is also logged)."}),
		processes: prometheus.NewDesc("colibri_hosted_processes", "Hosted processes alive.", nil, nil),
		warm:      prometheus.NewDesc("colibri_warm_sessions", "Warm sessions up, per persistent server.", []string{"server"}, nil),
		circuit:   prometheus.NewDesc("colibri_circuit_open", "1 while a persistent server fails fast after repeated failures.", []string{"server"}, nil),
		up:        prometheus.NewDesc("colibri_upstream_up", "1 when the server's last start succeeded, 0 when it failed.", []string{"server"}, nil),
		spares:    prometheus.NewDesc("colibri_spare_processes", "Spare processes started and ready, per per_request server with spare.", []string{"server"}, nil),
		spareHits: prometheus.NewDesc("colibri_spare_hits_total", "Requests that found a spare process ready.", []string{"server"}, nil),
		spareMisses: prometheus.NewDesc("colibri_spare_misses_total", "Requests to a server with spare that found none ready and started their own process.",
			[]string{"server"}, nil),
	}
	if o.State != nil {
		m.SetState(o.State)
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "colibri_build_info",
		Help:        "colibri-mcp's version, commit and Go version; always 1.",
		ConstLabels: prometheus.Labels{"version": o.Version, "commit": o.Commit, "goversion": runtime.Version()}})
	info.Set(1)
	m.registryValid = prometheus.NewGauge(prometheus.GaugeOpts{Name: "colibri_registry_valid",
		Help: "1 while the registry reads and validates, 0 otherwise (GET /readyz says why)."})
	m.registryErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "colibri_registry_errors_total",
		Help: "Times the registry was found invalid with a content not seen just before (each is also logged at warn)."})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "colibri_http_refused_total",
		Help: "HTTP requests refused before they reached MCP, by reason: 401, 403, 413, session_cap."}, []string{"reason"})
	sessions := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "colibri_http_sessions",
		Help: "MCP sessions open over HTTP (Streamable HTTP and SSE)."}, func() float64 {
		if f := m.sessions.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
	chainLines := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "colibri_audit_chain_lines",
		Help: "Lines of this process's audit chain (each names the one before it), to check a copy of the log kept elsewhere against."}, func() float64 {
		if f := m.chainLines.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
	m.reg.MustRegister(m.calls, m.clientOps, m.serverOps, m.retries, m.denials, m.pinChanges, m.pinFlags, m.egressNo, m.egressConns, m.auditErrors, chainLines, info, gauges{m},
		m.registryValid, m.registryErrors, m.refused, sessions,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: nil})
	return m
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler { return m.handler }

// SetState sets what the gauges read at each scrape (Options.State), for
// wiring in which the state's source is made after the metrics.
func (m *Metrics) SetState(f func() State) { m.state.Store(&f) }

// RegistryValid sets colibri_registry_valid.
func (m *Metrics) RegistryValid(valid bool) {
	if m != nil {
		m.registryValid.Set(b2f(valid))
	}
}

// RegistryError counts a registry found invalid (a content not seen just
// before).
func (m *Metrics) RegistryError() {
	if m != nil {
		m.registryErrors.Inc()
	}
}

// refusalReasons are the label values of colibri_http_refused_total.
var refusalReasons = []string{"401", "403", "413", "session_cap"}

// HTTPRefused counts an HTTP request refused for reason (one of 401, 403,
// 413, session_cap; anything else is Other).
func (m *Metrics) HTTPRefused(reason string) {
	if m == nil {
		return
	}
	if !slices.Contains(refusalReasons, reason) {
		reason = Other
	}
	m.refused.WithLabelValues(reason).Inc()
}

// SetSessions sets what colibri_http_sessions reads at each scrape.
func (m *Metrics) SetSessions(f func() int) {
	if m != nil {
		m.sessions.Store(&f)
	}
}

// Registry is the metrics' own registry (for tests and extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ToolCall counts one call of a hosted tool. Past MaxToolsPerServer tool
// names for one server, tool is counted as Other.
func (m *Metrics) ToolCall(server, tool, outcome, errorKind string) {
	if m != nil {
		m.calls.WithLabelValues(server, m.toolLabel(server, tool), outcome, ErrorType(errorKind)).Inc()
	}
}

// toolLabel is tool as a label value of server's: itself while server has
// fewer than MaxToolsPerServer, else Other.
func (m *Metrics) toolLabel(server, tool string) string {
	if tool == Other {
		return tool
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tools == nil {
		m.tools = map[string]map[string]bool{}
	}
	known := m.tools[server]
	switch {
	case known[tool]:
		return tool
	case len(known) >= MaxToolsPerServer:
		return Other
	case known == nil:
		known = map[string]bool{}
		m.tools[server] = known
	}
	known[tool] = true
	return tool
}

// PolicyDenial counts one call the policy refused.
func (m *Metrics) PolicyDenial(server string) {
	if m != nil {
		m.denials.WithLabelValues(server).Inc()
	}
}

// ToolChange counts one change of a hosted tool's definition against its
// pin: first seen, or a call refused for it (docs/cli.md#pinned-tool-definitions).
func (m *Metrics) ToolChange(server string) {
	if m != nil {
		m.pinChanges.WithLabelValues(server).Inc()
	}
}

// EgressRefused counts one connection the egress proxy refused a server.
func (m *Metrics) EgressRefused(server string) {
	if m != nil {
		m.egressNo.WithLabelValues(server).Inc()
	}
}

// EgressConnection counts one connection the egress proxy made for a server.
func (m *Metrics) EgressConnection(server string) {
	if m != nil {
		m.egressConns.WithLabelValues(server).Inc()
	}
}

// PinFlag counts one sign of tool poisoning found in a definition of
// server's (flag: one of internal/pin's Flag kinds).
func (m *Metrics) PinFlag(server, flag string) {
	if m != nil {
		m.pinFlags.WithLabelValues(server, flag).Inc()
	}
}

// AuditWriteError counts one audit record lost.
func (m *Metrics) AuditWriteError() {
	if m != nil {
		m.auditErrors.Inc()
	}
}

// SetAuditChain sets what colibri_audit_chain_lines reads at each scrape:
// the lines of this process's audit chain.
func (m *Metrics) SetAuditChain(lines func() int64) {
	if m != nil {
		m.chainLines.Store(&lines)
	}
}

// ServerOperation observes one request a caller sent colibri; errorType is
// "" when it succeeded. Notifications are not operations, and are left out.
func (m *Metrics) ServerOperation(method string, took time.Duration, errorType string) {
	if m != nil && !strings.HasPrefix(method, "notifications/") {
		m.serverOps.WithLabelValues(Method(method), ErrorType(errorType)).Observe(took.Seconds())
	}
}

// ClientOperation observes one request colibri sent a hosted server.
func (m *Metrics) ClientOperation(server, method string, took time.Duration, errorType string) {
	if m != nil {
		m.clientOps.WithLabelValues(Method(method), server, ErrorType(errorType)).Observe(took.Seconds())
	}
}

// Retry counts one retry of phase on server.
func (m *Metrics) Retry(server, phase string) {
	if m != nil {
		m.retries.WithLabelValues(server, phase).Inc()
	}
}

// methods are the MCP methods a label may name (MCP 2025-11-25).
var methods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true, "prompts/list": true, "prompts/get": true,
	"completion/complete": true, "logging/setLevel": true, "sampling/createMessage": true,
	"elicitation/create": true, "roots/list": true,
	"tasks/get": true, "tasks/list": true, "tasks/cancel": true, "tasks/result": true,
	"server/discover": true, "subscriptions/listen": true, // MCP 2026-07-28
}

// Method is name when it is an MCP method, else Other: a caller may send
// any method name, and labels must stay few.
func Method(name string) string {
	if methods[name] {
		return name
	}
	return Other
}

// rpcCodes are the JSON-RPC error codes an error_type may name: JSON-RPC's
// own, and those MCP and go-sdk define. A hosted server chooses the code of
// its error answers: any other code, of the 2^63 it could send, is Other.
var rpcCodes = map[int64]bool{
	-32700: true, -32600: true, -32601: true, -32602: true, -32603: true, // JSON-RPC 2.0
	-32000: true, -32001: true, // connection closed, request timeout (the TypeScript SDK)
	-32002: true,                             // resource not found
	-32020: true, -32021: true, -32022: true, // go-sdk: header mismatch, missing capabilities, protocol version
	-32042: true, // URL elicitation required
}

// errorWord is an error type colibri names itself: an error kind,
// "tool_error", "timeout", "cancelled", "transport".
var errorWord = regexp.MustCompile(`^[a-z][a-z_]{0,31}$`)

// ErrorType is errorType as a label value: "" (no error), a word of
// colibri's, or a JSON-RPC code of rpcCodes; anything else is Other.
func ErrorType(errorType string) string {
	if errorType == "" || errorWord.MatchString(errorType) {
		return errorType
	}
	if code, err := strconv.ParseInt(errorType, 10, 64); err == nil && rpcCodes[code] {
		return errorType
	}
	return Other
}

// gauges reads State at each scrape.
type gauges struct{ m *Metrics }

func (g gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.m.processes
	ch <- g.m.warm
	ch <- g.m.circuit
	ch <- g.m.up
	ch <- g.m.spares
	ch <- g.m.spareHits
	ch <- g.m.spareMisses
}

func (g gauges) Collect(ch chan<- prometheus.Metric) {
	f := g.m.state.Load()
	if f == nil {
		return
	}
	st := (*f)()
	ch <- prometheus.MustNewConstMetric(g.m.processes, prometheus.GaugeValue, float64(st.Processes))
	for _, s := range st.Servers {
		ch <- prometheus.MustNewConstMetric(g.m.warm, prometheus.GaugeValue, float64(s.Warm), s.Server)
		ch <- prometheus.MustNewConstMetric(g.m.circuit, prometheus.GaugeValue, b2f(s.CircuitOpen), s.Server)
		if s.Up != nil {
			ch <- prometheus.MustNewConstMetric(g.m.up, prometheus.GaugeValue, b2f(*s.Up), s.Server)
		}
		if sp := s.Spares; sp != nil {
			ch <- prometheus.MustNewConstMetric(g.m.spares, prometheus.GaugeValue, float64(sp.Ready), s.Server)
			ch <- prometheus.MustNewConstMetric(g.m.spareHits, prometheus.CounterValue, float64(sp.Hits), s.Server)
			ch <- prometheus.MustNewConstMetric(g.m.spareMisses, prometheus.CounterValue, float64(sp.Misses), s.Server)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
