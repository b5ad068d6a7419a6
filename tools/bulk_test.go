package tools_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/httpserve"
	"github.com/colibri-mcp/colibri-mcp/internal/stdioserve"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// Large strings cross colibri's stdio face by reference (internal/bulk):
// these tests call through the face, the tools, the host and a warm fake
// server, as colibri-mcp serve wires them, and check what a caller sees.

// bulkMin is the smallest string lifted in these tests: small enough that
// the messages stay quick, large enough that small members never are.
const bulkMin = 4 << 10

// forFaces runs fn once through each of colibri's faces: stdio and
// Streamable HTTP lift a call's large strings and lower its answer; the
// legacy SSE face lowers the answer.
func forFaces(t *testing.T, fn func(t *testing.T, face string)) {
	onFaces(t, []string{"stdio", "http", "sse"}, fn)
}

// onFaces runs fn once through each of faces.
func onFaces(t *testing.T, faces []string, fn func(t *testing.T, face string)) {
	for _, face := range faces {
		t.Run(face, func(t *testing.T) {
			t.Parallel()
			fn(t, face)
		})
	}
}

// argsLifted is how many strings a face lifts from a call's arguments of
// one large string: the legacy SSE face answers a POST before its call runs,
// so it has no span to hold them in, and lifts none.
func argsLifted(face string) uint64 {
	if face == "sse" {
		return 0
	}
	return 1
}

// faceWithBulk serves reg through a face ("stdio", "http" or "sse") with a bulk
// table shared by the face, the tools and the host, and returns a client of
// it.
func faceWithBulk(t *testing.T, face string, table *bulk.Table, reg *registry.Registry, aggregate bool) *mcp.ClientSession {
	return faceWithBulkOpts(t, face, table, reg, tools.Options{Aggregate: aggregate})
}

// faceWithBulkOpts is faceWithBulk with more of the tools' options.
func faceWithBulkOpts(t *testing.T, face string, table *bulk.Table, reg *registry.Registry, opts tools.Options) *mcp.ClientSession {
	t.Helper()
	h := host.New(host.Options{Timeout: 30 * time.Second, TerminateGrace: 200 * time.Millisecond, Bulk: table})
	opts.Registry = func() (*registry.Registry, error) { return reg, nil }
	opts.ConfigPath, opts.Host, opts.ExternalCall, opts.Bulk = "in-memory", h, true, table
	svc := tools.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	var cs *mcp.ClientSession
	var stop func()
	switch face {
	case "stdio":
		toServer, fromClient := io.Pipe()
		toClient, fromServer := io.Pipe()
		ss, err := svc.NewServer("test").Connect(ctx, &stdioserve.Transport{Reader: toServer, Writer: fromServer, Bulk: table}, nil)
		if err != nil {
			t.Fatal(err)
		}
		stop = func() { ss.Close() }
		if cs, err = client.Connect(ctx, &mcp.IOTransport{Reader: toClient, Writer: fromClient}, nil); err != nil {
			t.Fatal(err)
		}
	case "http", "sse":
		srv, err := httpserve.New(httpserve.Options{Addr: "127.0.0.1:0", Server: svc.NewServer("test"), Bulk: table, MaxBodyBytes: 64 << 20})
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx) }()
		stop = func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
		var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: srv.URL(), HTTPClient: &http.Client{}}
		if face == "sse" {
			tr = &mcp.SSEClientTransport{Endpoint: strings.TrimSuffix(srv.URL(), "/mcp") + "/sse", HTTPClient: &http.Client{}}
		}
		if cs, err = client.Connect(ctx, tr, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		cs.Close()
		stop()
		cancel()
		svc.Close()
		h.Close()
	})
	return cs
}

func warmFake() *registry.Registry {
	return &registry.Registry{Servers: map[string]*registry.Server{
		"warm": {Name: "warm", Command: fakeBin, Args: []string{"ok"}, Lifecycle: registry.Persistent},
	}}
}

// bigText is n bytes of text with everything JSON escapes or an encoder
// might rewrite: quotes, backslashes, control characters, HTML characters,
// U+2028, and characters of two, three and four bytes.
func bigText(n int) string {
	const piece = `"quoted" \back\slash\ tab	nl
<b>&amp;</b> é € 😀 ` + "\u2028\x01/"
	return strings.Repeat(piece, n/len(piece)+1)
}

// waitEmpty waits until the table holds nothing: every lifted string was
// released by its owner (a call's answer, a scope's end run on its own
// goroutine).
func waitEmpty(t *testing.T, table *bulk.Table) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for table.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the bulk table still holds %d strings: a lifted string was never released", table.Len())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("no content: %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content 0 is %T, want text", res.Content[0])
	}
	return tc.Text
}

func TestBulkEchoThroughTheFace(t *testing.T) {
	t.Parallel()
	forFaces(t, func(t *testing.T, face string) {
		table := bulk.New(bulkMin)
		cs := faceWithBulk(t, face, table, warmFake(), false)
		msg := bigText(300 << 10)
		for range 2 { // cold, then warm
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.CallToolTool,
				Arguments: map[string]any{"server": "warm", "name": "echo", "arguments": map[string]any{"message": msg}}})
			if err != nil {
				t.Fatal(err)
			}
			if got := textOf(t, res); res.IsError || got != "Echo: "+msg {
				t.Fatalf("isError %v, echo of %d bytes came back as %d bytes (%.80q…)", res.IsError, len(msg), len(got), got)
			}
		}
		// The arguments (caller → colibri) and the result (server → colibri)
		// crossed by reference, both times.
		if n, want := table.Lifted(), 2*(argsLifted(face)+1); n < want {
			t.Errorf("%s: %d strings were lifted, want the result (and the arguments, but over SSE) of both calls (%d)", face, n, want)
		}
		waitEmpty(t, table)
	})
}

func TestBulkStructuredContentAndImage(t *testing.T) {
	t.Parallel()
	forFaces(t, func(t *testing.T, face string) {
		table := bulk.New(bulkMin)
		cs := faceWithBulk(t, face, table, warmFake(), false)
		msg := bigText(100 << 10)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.CallToolTool,
			Arguments: map[string]any{"server": "warm", "name": "mirror", "arguments": map[string]any{"message": msg, "small": "s"}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || len(res.Content) != 2 {
			t.Fatalf("isError %v, %d contents: %.200q", res.IsError, len(res.Content), textOf(t, res))
		}
		var echoed map[string]any
		if err := json.Unmarshal([]byte(textOf(t, res)), &echoed); err != nil || echoed["message"] != msg {
			t.Errorf("text content: the hosted server did not receive the message as sent (%v)", err)
		}
		sc, _ := res.StructuredContent.(map[string]any)
		if sc["message"] != msg || sc["small"] != "s" {
			t.Errorf("structuredContent: message of %d bytes, small %v", len(sc["message"].(string)), sc["small"])
		}
		// An image's data is base64 that go-sdk decodes: it must pass whole.
		if img, ok := res.Content[1].(*mcp.ImageContent); !ok || string(img.Data) != msg {
			t.Errorf("image content: %T, data of the wrong bytes", res.Content[1])
		}
		if n, want := table.Lifted(), argsLifted(face)+2; n < want {
			t.Errorf("%s: %d strings lifted, want the argument (but over SSE) and both copies the result holds as text (%d)", face, n, want)
		}
		waitEmpty(t, table)
	})
}

func TestBulkCancelledCallReleasesItsStrings(t *testing.T) {
	t.Parallel()
	// (Over SSE, no argument is lifted: see argsLifted.)
	onFaces(t, []string{"stdio", "http"}, func(t *testing.T, face string) {
		table := bulk.New(bulkMin)
		cs := faceWithBulk(t, face, table, warmFake(), false)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.CallToolTool,
				Arguments: map[string]any{"server": "warm", "name": "mirror", "arguments": map[string]any{"message": bigText(64 << 10), "ms": 60_000}}})
			done <- err
		}()
		// The call's argument is in the table while the hosted server holds it.
		deadline := time.Now().Add(10 * time.Second)
		for table.Len() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the argument was never lifted")
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		if err := <-done; err == nil {
			t.Fatal("the cancelled call returned no error")
		}
		waitEmpty(t, table)
		// The session goes on: the next call works.
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.CallToolTool,
			Arguments: map[string]any{"server": "warm", "name": "echo", "arguments": map[string]any{"message": bigText(64 << 10)}}})
		if err != nil || res.IsError {
			t.Fatalf("the next call: %v %+v", err, res)
		}
		waitEmpty(t, table)
	})
}

func TestBulkOwnInputsAreReadAsSent(t *testing.T) {
	t.Parallel()
	forFaces(t, func(t *testing.T, face string) {
		table := bulk.New(bulkMin)
		cs := faceWithBulk(t, face, table, warmFake(), false)
		name := "no-such-server-" + strings.Repeat("x", 2*bulkMin)
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{tools.ListToolsTool, map[string]any{"server": name}},
			{tools.CallToolTool, map[string]any{"server": name, "name": "echo"}},
			{tools.CallToolTool, map[string]any{"server": "warm", "name": name}},
		} {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			text := textOf(t, res)
			if !res.IsError || strings.Contains(text, "colibri-bulk-") || !strings.Contains(text, "no-such-server-xxx") {
				t.Errorf("%s: isError %v, %.200q: want colibri's error about the name as sent", tc.tool, res.IsError, text)
			}
		}
		waitEmpty(t, table)
	})
}

func TestBulkAggregateCall(t *testing.T) {
	t.Parallel()
	forFaces(t, func(t *testing.T, face string) {
		table := bulk.New(bulkMin)
		cs := faceWithBulk(t, face, table, warmFake(), true)
		if listed(t, cs)["warm__echo"] == nil { // a tools/list waits for the hosted list
			t.Fatal("warm__echo is not offered")
		}
		msg := bigText(50 << 10)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "warm__echo", Arguments: map[string]any{"message": msg}})
		if err != nil {
			t.Fatal(err)
		}
		if got := textOf(t, res); res.IsError || got != "Echo: "+msg {
			t.Fatalf("isError %v, %.120q", res.IsError, got)
		}
		if n, want := table.Lifted(), argsLifted(face)+1; n < want {
			t.Errorf("%s: %d strings lifted, want the argument (but over SSE) and the result (%d)", face, n, want)
		}
		waitEmpty(t, table)
	})
}

// The hosted tool's schema is checked against the strings as sent, not
// their references, and the hosted server receives the caller's bytes.
func TestBulkSchemaCheckReadsTheStrings(t *testing.T) {
	t.Parallel()
	forFaces(t, func(t *testing.T, face string) {
		table := bulk.New(bulkMin)
		schema := map[string]any{"type": "object", "properties": map[string]any{
			"message": map[string]any{"type": "string", "pattern": "^a+$", "maxLength": 20000}}}
		reg := &registry.Registry{Servers: map[string]*registry.Server{"listed": listedTools(t, []map[string]any{tool("strict", schema)})}}
		reg.Servers["listed"].Name = "listed"
		cs := faceWithBulk(t, face, table, reg, false)
		call := func(message string) *mcp.CallToolResult {
			t.Helper()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.CallToolTool,
				Arguments: map[string]any{"server": "listed", "name": "strict", "arguments": map[string]any{"message": message}}})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		ok := strings.Repeat("a", 10000)
		if res := call(ok); res.IsError || textOf(t, res) != `called strict {"message":"`+ok+`"}` {
			t.Errorf("a valid 10 kB string: isError %v, %.100q", res.IsError, textOf(t, res))
		}
		for _, bad := range []string{ok + "b", strings.Repeat("a", 20001)} {
			res := call(bad)
			if kind := errorKind(t, res); kind != "invalid_arguments" {
				t.Errorf("an invalid %d-byte string: kind %q, want invalid_arguments: %.200q", len(bad), kind, textOf(t, res))
			}
		}
		waitEmpty(t, table)
	})
}

// The audit record digests the arguments the hosted server was sent and
// counts the result's bytes in full.
func TestBulkAuditRecord(t *testing.T) {
	t.Parallel()
	forFaces(t, func(t *testing.T, face string) {
		path := filepath.Join(t.TempDir(), "audit.log")
		w, err := audit.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		table := bulk.New(bulkMin)
		cs := faceWithBulkOpts(t, face, table, warmFake(), tools.Options{Audit: w})
		msg := bigText(20 << 10)
		args := map[string]any{"message": msg}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.CallToolTool,
			Arguments: map[string]any{"server": "warm", "name": "echo", "arguments": args}})
		if err != nil || res.IsError {
			t.Fatalf("%v %+v", err, res)
		}
		raw, _ := json.Marshal(args)
		want := audit.NewDigester(nil).Digest(raw)
		b, _ := os.ReadFile(path)
		var rec audit.Record
		if err := json.Unmarshal(b, &rec); err != nil || rec.Args == nil || rec.ResultBytes == nil {
			t.Fatalf("audit log %q: %v", b, err)
		}
		if *rec.Args != want {
			t.Errorf("args %+v, want %+v (the digest of what was sent)", *rec.Args, want)
		}
		if *rec.ResultBytes < int64(len(msg)) {
			t.Errorf("result_bytes %d, for a result of more than %d", *rec.ResultBytes, len(msg))
		}
	})
}

// A remote server is reached over go-sdk's HTTP transport, which knows
// nothing of the table: it is sent the strings themselves.
func TestBulkRemoteUpstreamGetsTheStrings(t *testing.T) {
	t.Parallel()
	forFaces(t, func(t *testing.T, face string) {
		remote := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
		type in struct {
			Message string `json:"message"`
		}
		mcp.AddTool(remote, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
		})
		srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, nil))
		defer srv.Close()
		// Before Close: the warm session's GET stream would hold it.
		defer srv.CloseClientConnections()
		table := bulk.New(bulkMin)
		reg := &registry.Registry{Servers: map[string]*registry.Server{"far": {Name: "far", URL: srv.URL}}}
		cs := faceWithBulk(t, face, table, reg, false)
		msg := bigText(30 << 10)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.CallToolTool,
			Arguments: map[string]any{"server": "far", "name": "echo", "arguments": map[string]any{"message": msg}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := textOf(t, res); res.IsError || got != "Echo: "+msg {
			t.Fatalf("isError %v, %.200q", res.IsError, got)
		}
		waitEmpty(t, table)
	})
}
