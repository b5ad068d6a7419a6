package tools_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// Who holds a request's large strings, and until when (internal/bulk's
// Owner): the cases a careless caller makes, through the whole of colibri.

// blockingRemote is a remote MCP server whose tool "wait" says it has
// begun (arrived) and runs until its call is cancelled, or the test ends.
func blockingRemote(t *testing.T) (url string, arrived chan struct{}) {
	t.Helper()
	arrived = make(chan struct{}, 1)
	over := make(chan struct{})
	remote := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
		arrived <- struct{}{}
		select {
		case <-ctx.Done():
		case <-over:
		}
		return nil, nil, ctx.Err()
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, nil))
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections) // (before Close: a GET stream would hold it)
	t.Cleanup(func() { close(over) })
	return srv.URL, arrived
}

// A caller that goes away, then cancels its call (its POST has ended: the
// face has let go of the request): the call holds its strings until it has
// returned, so its audit line carries the digest of the arguments the
// hosted server was sent, as any call's does. (Held only while its context
// lived, the strings went with the cancellation, before the audit line was
// written.)
func TestBulkHTTPCancelledCallIsAuditedWithItsArguments(t *testing.T) {
	t.Parallel()
	url, arrived := blockingRemote(t)
	auditPath, w := tempAudit(t)
	table := bulk.New(bulkMin)
	reg := &registry.Registry{Servers: map[string]*registry.Server{"far": {Name: "far", URL: url}}}
	f := newRawHTTP(t, table, reg, tools.Options{Audit: w})

	args := `{"message":"` + strings.Repeat("m", 3*bulkMin) + `"}`
	ctx, gone := context.WithCancel(t.Context())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		if resp := f.postOrErr(ctx, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tools.CallToolTool+
			`","arguments":{"server":"far","name":"wait","arguments":`+args+`}}}`); resp != nil {
			io.Copy(io.Discard, resp.Body) // until the caller goes
			resp.Body.Close()
		}
	}()
	select {
	case <-arrived:
	case <-ended:
		t.Fatal("the call's POST ended before the call reached the remote")
	}
	gone()
	<-ended
	f.waitPOSTEnded(table)
	f.post(t.Context(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`).Body.Close()
	var line []byte
	eventually(t, "the audit line", func() bool {
		line, _ = os.ReadFile(auditPath)
		return len(line) > 0
	})
	var rec audit.Record
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatalf("%v: %q", err, line)
	}
	want := audit.NewDigester(nil).Digest([]byte(args))
	if rec.Outcome != audit.Cancelled || rec.Args == nil || *rec.Args != want {
		t.Errorf("audit line %s, want outcome cancelled and the digest of the arguments sent (%+v)", line, want)
	}
	waitEmpty(t, table)
}

