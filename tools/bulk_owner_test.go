package tools_test

import (
	"bufio"
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
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
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
		select {
		case arrived <- struct{}{}:
		default: // (a call sent again must not block)
		}
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
	testwait.Eventually(t, "the audit line", func() bool {
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

// A caller whose stream dropped before its answer was written comes back
// for it (GET with Last-Event-ID: a resumable stream, 2025-11-25): it is
// sent the answer, large strings and all, though its POST and its call
// have both ended, and with them the request that owned those strings.
func TestBulkHTTPResumedStreamGetsTheAnswer(t *testing.T) {
	t.Parallel()
	answered, proceed := make(chan struct{}, 1), make(chan struct{})
	hold := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/call" {
				answered <- struct{}{}
				<-proceed // go-sdk writes the answer only once the caller is gone
			}
			return res, err
		}
	}
	table := bulk.New(bulkMin)
	f := newRawHTTP(t, table, warmFake(), tools.Options{}, hold)
	msg := strings.Repeat("m", 3*bulkMin)
	ctx, gone := context.WithCancel(t.Context())
	defer gone()
	resp := f.post(ctx, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tools.CallToolTool+
		`","arguments":{"server":"warm","name":"echo","arguments":{"message":"`+msg+`"}}}}`)
	// The priming event's id: where the stream is resumed from.
	r := bufio.NewReader(resp.Body)
	last := ""
	for last == "" {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("no event id on the call's stream: %v", err)
		}
		if id, ok := strings.CutPrefix(strings.TrimSpace(l), "id: "); ok {
			last = id
		}
	}
	<-answered
	gone()
	resp.Body.Close()
	f.waitPOSTEnded(table)
	close(proceed)
	waitEmpty(t, table) // the call has ended

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", f.session)
	req.Header.Set("Last-Event-ID", last)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r = bufio.NewReaderSize(resp.Body, 1<<20)
	for {
		l, err := r.ReadString('\n')
		if d, ok := strings.CutPrefix(l, "data: "); ok && strings.Contains(d, `"id":7`) {
			if !strings.Contains(d, `"Echo: `+msg+`"`) {
				t.Errorf("the resumed stream's answer: %.300q", d)
			}
			break
		}
		if err != nil {
			t.Fatalf("the resumed stream ended without the answer: %v (status %d) %q %q", err, resp.StatusCode, l, last)
		}
	}
	if n := table.Len(); n != 0 {
		t.Errorf("the table holds %d strings", n)
	}
}
