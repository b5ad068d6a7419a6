package host_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
)

// OnRequest is told of each request sent to a hosted server, with its
// outcome; OnRetry of each retry; Status says whether the last start
// succeeded. (The metrics of docs/operations.md#metrics.)
func TestObserversAndStatus(t *testing.T) {
	var mu sync.Mutex
	var seen, retries []string
	h := newHarness(t, host.Options{
		OnRequest: func(server, method string, _ time.Duration, errType string) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, server+" "+method+" "+errType)
		},
		OnRetry: func(server string, phase failure.Phase) {
			mu.Lock()
			defer mu.Unlock()
			retries = append(retries, server+" "+string(phase))
		},
	})
	if st := h.Status("ok"); st.Tried {
		t.Errorf("status before any start: %+v", st)
	}
	if _, err := h.CallTool(t.Context(), fake("ok"), "echo", session.ArgumentsOf(map[string]any{"message": "hi"}), nil, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := strings.Join(seen, "; ")
	mu.Unlock()
	// The fake is go-sdk's, which speaks 2026-07-28: server/discover, and
	// the stream its tools/list_changed would come on, instead of initialize.
	if got != "ok server/discover ; ok subscriptions/listen ; ok tools/list ; ok tools/call " {
		t.Errorf("requests seen: %q", got)
	}
	if st := h.Status("ok"); !st.Tried || !st.Up || st.Warm != 0 || st.CircuitOpen {
		t.Errorf("status after a good call: %+v", st)
	}
	// A server that refuses to start: down.
	if _, err := h.ListTools(t.Context(), fake("exit-early"), nil); err == nil {
		t.Fatal("exit-early listed")
	}
	if st := h.Status("exit-early"); !st.Tried || st.Up {
		t.Errorf("status after a failed start: %+v", st)
	}
	// An idempotent tool whose process crashes is called again: one retry.
	srv := fake("ok")
	srv.Env["CRASH_ONCE_MARKER"] = filepath.Join(t.TempDir(), "crashed")
	if _, err := h.CallTool(t.Context(), srv, "crash-idempotent", nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(retries, "; "); got != "ok call" {
		t.Errorf("retries seen: %q", got)
	}
}
