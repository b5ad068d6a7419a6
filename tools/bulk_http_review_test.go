package tools_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// A refused call (begun after its POST ended) whose server and tool names
// were themselves large, and lifted, is audited without them: their strings
// are gone, and what stands in their place (a reference, carrying the
// table's secret marker) never reaches the audit log or colibri's log.
func TestBulkHTTPRefusedCallNamesNoReference(t *testing.T) {
	t.Parallel()
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	w, err := audit.Open(auditPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	entered, proceed := make(chan struct{}, 1), make(chan struct{})
	gate := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				entered <- struct{}{}
				<-proceed
			}
			return next(ctx, method, req)
		}
	}
	logs := &syncbuf.Buffer{}
	table := bulk.New(bulkMin)
	f := newRawHTTP(t, table, warmFake(), tools.Options{Audit: w,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, gate)
	ctx, gone := context.WithCancel(t.Context())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		if resp := f.postOrErr(ctx, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tools.CallToolTool+
			`","arguments":{"server":"`+strings.Repeat("s", 2*bulkMin)+`","name":"`+strings.Repeat("n", 2*bulkMin)+
			`","arguments":{"message":"`+strings.Repeat("m", 2*bulkMin)+`"}}}}`); resp != nil {
			resp.Body.Close()
		}
	}()
	<-entered
	gone()
	<-ended
	f.waitPOSTEnded(table)
	close(proceed)
	eventually(t, "the audit line", func() bool {
		b, _ := os.ReadFile(auditPath)
		return len(b) > 0
	})
	b, _ := os.ReadFile(auditPath)
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("%v: %q", err, b)
	}
	if rec["server"] != nil || rec["tool"] != nil || rec["outcome"] != "error" || rec["error_kind"] != "internal" {
		t.Errorf("audit line %s, want no server or tool (their strings are gone), outcome error, error_kind internal", b)
	}
	if strings.Contains(string(b), "colibri-bulk-") {
		t.Errorf("a reference reached the audit log: %s", b)
	}
	if strings.Contains(logs.String(), "colibri-bulk-") || strings.Contains(f.logs.String(), "colibri-bulk-") {
		t.Errorf("a reference reached colibri's log:\n%s\n%s", logs.String(), f.logs.String())
	}
}
