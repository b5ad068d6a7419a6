package host_test

//lint:file-ignore SA1019 the tests drive the sampling, roots and logging that colibri relays on purpose.

// The protocol version colibri speaks to each hosted server: 2026-07-28 to
// a server that speaks it, 2025-11-25 otherwise, with a bounded probe
// remembered per entry and server version.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// A go-sdk server that speaks only 2026-07-28 is served: listed, called,
// per request and warm (whose health check is not ping, which 2026-07-28
// has not).
func TestUpstreamModernOnlyServer(t *testing.T) {
	h := newHarness(t, host.Options{PingInterval: 50 * time.Millisecond})
	for _, srv := range []*registry.Server{fake("modern-only"), persistent("modern-only")} {
		tools, err := h.ListTools(t.Context(), srv, nil)
		if err != nil || len(tools) != 3 {
			t.Fatalf("%s: list: %v %v", srv.Lifecycle, tools, err)
		}
		var seen struct{ Version string }
		json.Unmarshal([]byte(callText(t, h, srv, "seen", nil)), &seen)
		if seen.Version != "2026-07-28" {
			t.Errorf("%s: the call was made with version %q", srv.Lifecycle, seen.Version)
		}
	}
	// The warm process answers its health checks: it stays the one process.
	srv := persistent("modern-only")
	pid := h.Warm("modern-only")[0].PID
	time.Sleep(200 * time.Millisecond) // several ping intervals: what is asserted is that nothing happens
	if got := callText(t, h, srv, "echo", map[string]any{"message": "still"}); got != "Echo: still" {
		t.Errorf("echo: %q", got)
	}
	if warm := h.Warm("modern-only"); len(warm) != 1 || warm[0].PID != pid {
		t.Errorf("the warm 2026-07-28 server was replaced (health check failed): %+v, was pid %d", warm, pid)
	}
}

// A legacy server that ignores server/discover costs one bounded probe
// once per entry and server version, not one per request.
func TestUpstreamLegacyServerProbedOnce(t *testing.T) {
	h := newHarness(t, host.Options{ProbeTimeout: 300 * time.Millisecond})
	dir := t.TempDir()
	ignored, version := filepath.Join(dir, "ignored"), filepath.Join(dir, "version")
	os.WriteFile(version, []byte("1"), 0o644)
	srv := fake("legacy-silent")
	srv.Env["FAKEMCP_IGNORED_LOG"], srv.Env["FAKEMCP_VERSION_FILE"] = ignored, version
	probes := func() int {
		b, _ := os.ReadFile(ignored)
		return strings.Count(string(b), "server/discover\n")
	}
	start := time.Now()
	if got := callText(t, h, srv, "echo", map[string]any{"message": "a"}); got != "Echo: a" {
		t.Fatalf("echo: %q", got)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("the first call took %v: it cannot have waited for the probe", took)
	}
	for range 3 {
		callText(t, h, srv, "echo", map[string]any{"message": "b"})
	}
	if n := probes(); n != 1 {
		t.Errorf("server/discover sent %d times, want once", n)
	}
	// The server behind the entry is upgraded (another version): it is
	// probed once more, after the start that saw the new version.
	os.WriteFile(version, []byte("2"), 0o644)
	for range 3 {
		callText(t, h, srv, "echo", map[string]any{"message": "c"})
	}
	if n := probes(); n != 2 {
		t.Errorf("server/discover sent %d times in all, want 2 (once per server version)", n)
	}
}

// A 2026-07-28 server's input request (MRTR: an input_required result) is
// relayed to the call's own caller, as a server→client request is, and the
// call retried with its answer; a caller without the capability is never
// asked, and is never offered it.
func TestUpstreamModernInputRequestRelayed(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := fake("modern-only")
	asked := 0
	caller := &session.Caller{Elicit: func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked++
		if p.Message != "your name?" {
			t.Errorf("elicitation relayed as %+v", p)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
	}}
	res, err := h.CallTool(t.Context(), srv, "ask", nil, caller, nil)
	got := text(t, res, err)
	if asked != 1 || !strings.Contains(got, `"ada"`) {
		t.Errorf("asked %d times; result %s", asked, got)
	}
	// Without the capability the server is not offered it, and the call
	// fails rather than asking anyone.
	var seen struct{ Capabilities map[string]any }
	json.Unmarshal([]byte(callText(t, h, srv, "seen", nil)), &seen)
	if seen.Capabilities["elicitation"] != nil {
		t.Errorf("a caller without elicitation: offered %v", seen.Capabilities)
	}
}

// colibri never offers a hosted server the tasks extension, whatever its
// caller has: go-sdk v1.8.0 would decode a task result into an empty
// success, so a task-augmented call could not be relayed.
func TestUpstreamNeverOffersTasks(t *testing.T) {
	h := newHarness(t, host.Options{})
	caller := &session.Caller{
		Elicit: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) { return nil, nil },
		CreateMessage: func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return nil, nil
		},
	}
	res, err := h.CallTool(t.Context(), fake("modern-only"), "seen", nil, caller, nil)
	got := text(t, res, err)
	if strings.Contains(got, "tasks") || !strings.Contains(got, "elicitation") {
		t.Errorf("capabilities offered: %s", got)
	}
}

// After initialize, every request to a Streamable HTTP server says the
// negotiated version in MCP-Protocol-Version (the transport specification
// requires it), and initialize itself carries none.
func TestUpstreamHTTPSendsTheProtocolVersionHeader(t *testing.T) {
	remote := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "hi"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil, nil
	})
	var mu sync.Mutex
	seen := map[string]string{}
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct{ Method string }
		if json.Unmarshal(body, &m) == nil && m.Method != "" {
			mu.Lock()
			seen[m.Method] = r.Header.Get("MCP-Protocol-Version")
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	// Before Close: the warm session's GET stream would hold it.
	defer srv.CloseClientConnections()
	h := newHarness(t, host.Options{})
	if got := callText(t, h, &registry.Server{Name: "far", URL: srv.URL}, "hi", nil); got != "hi" {
		t.Fatalf("hi: %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["initialize"] != "" || seen["tools/list"] != "2025-11-25" || seen["tools/call"] != "2025-11-25" {
		t.Errorf("MCP-Protocol-Version by method: %v", seen)
	}
}
