package tools_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/httpserve"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// Large strings crossing the Streamable HTTP face by reference, driven with
// raw HTTP as a careless or hostile caller drives it.

// rawHostTimeout is the host's phase timeout behind rawHTTP: a call that
// has not started its hosted server within it has failed, and its POST is
// answered.
const rawHostTimeout = 30 * time.Second

// rawHTTP is colibri's HTTP face, as colibri-mcp serve --http wires it,
// with a session opened by raw requests.
type rawHTTP struct {
	t       *testing.T
	url     string
	session string
	logs    *syncbuf.Buffer // the face's log, at debug
}

func newRawHTTP(t *testing.T, table *bulk.Table, reg *registry.Registry, opts tools.Options, outermost ...mcp.Middleware) *rawHTTP {
	t.Helper()
	// One log, at debug, of the face, tools and the host: a test that fails
	// shows it (the path a call took, or where it stopped).
	logs := &syncbuf.Buffer{}
	logger := slog.New(reqctx.Handler(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("colibri's log:\n%s", logs.String())
		}
	})
	h := host.New(host.Options{Timeout: rawHostTimeout, TerminateGrace: 200 * time.Millisecond, Bulk: table, Logger: logger})
	opts.Registry = func() (*registry.Registry, error) { return reg, nil }
	opts.ConfigPath, opts.Host, opts.ExternalCall, opts.Bulk = "in-memory", h, true, table
	if opts.Logger == nil {
		opts.Logger = logger
	}
	svc := tools.New(opts)
	server := svc.NewServer("test")
	srv, err := httpserve.New(httpserve.Options{Addr: "127.0.0.1:0", Server: server, Bulk: table, MaxBodyBytes: 64 << 20,
		Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	server.AddReceivingMiddleware(outermost...) // added last: outside the face's own
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		svc.Close()
		h.Close()
	})
	f := &rawHTTP{t: t, url: srv.URL(), logs: logs}
	resp := f.post(t.Context(), `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	f.session = resp.Header.Get("Mcp-Session-Id")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if f.session == "" {
		t.Fatal("initialize: no session")
	}
	resp = f.post(t.Context(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	return f
}

// post sends one POST of body on the session and returns the response.
func (f *rawHTTP) post(ctx context.Context, body string) *http.Response {
	f.t.Helper()
	resp := f.postOrErr(ctx, body)
	if resp == nil {
		f.t.Fatal("POST failed")
	}
	return resp
}

// postOrErr is post, nil when the request fails (the caller went away).
func (f *rawHTTP) postOrErr(ctx context.Context, body string) *http.Response {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if f.session != "" {
		req.Header.Set("Mcp-Session-Id", f.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	return resp
}

// waitPOSTEnded waits until the face has ended the POST of a call whose
// caller left: it says so, or (before the call held its strings) the table
// is empty.
func (f *rawHTTP) waitPOSTEnded(table *bulk.Table) {
	f.t.Helper()
	testwait.Eventually(f.t, "the POST to end", func() bool {
		return strings.Contains(f.logs.String(), "a POST ended before its call returned") || table.Len() == 0
	})
}

// answer reads a POST's response to its end and returns its data lines.
func (f *rawHTTP) answer(resp *http.Response) []string {
	f.t.Helper()
	defer resp.Body.Close()
	var data []string
	r := bufio.NewReaderSize(resp.Body, 1<<20)
	for {
		l, err := r.ReadString('\n')
		if d, ok := strings.CutPrefix(l, "data: "); ok && strings.TrimSpace(d) != "" { // (a priming event has no data)
			data = append(data, strings.TrimSuffix(d, "\n"))
		}
		if err != nil {
			return data
		}
	}
}

// A caller that goes away after sending a call does not stop the call
// (stateful sessions before 2026-07-28: go-sdk does not cancel it), so the
// hosted server is still sent it, later. It must be sent the caller's
// strings, not their references: a remote server (sent flattened
// arguments) would run its tool on "colibri-bulk-…", and learn the marker.
func TestBulkHTTPCallerGoneBeforeTheCallIsForwarded(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	got := make(chan string, 1)
	remote := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	type in struct {
		Message string `json:"message"`
	}
	mcp.AddTool(remote, &mcp.Tool{Name: "write"}, func(_ context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
		got <- in.Message
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil, nil
	})
	remoteHTTP := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, nil)
	reached := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- struct{}{}
		<-gate // colibri reaches the remote only once the test says so
		remoteHTTP.ServeHTTP(w, r)
	}))
	var opened sync.Once
	open := func() { opened.Do(func() { close(gate) }) }
	defer srv.Close()
	// Before Close: the warm session's GET stream would hold it.
	defer srv.CloseClientConnections()
	defer open()
	table := bulk.New(bulkMin)
	reg := &registry.Registry{Servers: map[string]*registry.Server{"far": {Name: "far", URL: srv.URL}}}
	f := newRawHTTP(t, table, reg, tools.Options{})

	msg := strings.Repeat("m", 3*bulkMin)
	ctx, gone := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tools.CallToolTool+`","arguments":{"server":"far","name":"write","arguments":{"message":"`+msg+`"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", f.session)
	sent := make(chan struct{})
	var outcome string // what the POST got, once sent is closed
	go func() {
		defer close(sent)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			outcome = err.Error()
			return
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		outcome = fmt.Sprintf("%d %q", resp.StatusCode, b)
	}()
	// The call runs (colibri connects to the remote), or its POST is
	// answered first: then it never will. (A call that cannot connect
	// within the host's timeout is answered too; twice that is a hang.)
	select {
	case <-reached:
	case <-sent:
		t.Fatalf("the call's POST was answered before the call reached the remote: %s", outcome)
	case <-time.After(2 * rawHostTimeout):
		t.Fatal("the call never reached the remote, and its POST is still open")
	}
	gone() // and the caller goes away
	<-sent
	f.waitPOSTEnded(table) // the call goes on
	select {
	case <-got:
		t.Fatal("the remote was called before the gate opened")
	default:
	}
	open()
	select {
	case m := <-got:
		if m != msg {
			t.Errorf("the remote tool ran on %d bytes %.60q, want the %d bytes the caller sent", len(m), m, len(msg))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the remote tool never ran")
	}
	waitEmpty(t, table)
}

// tempAudit is an audit log in a temporary folder: its path, and its
// writer, closed when the test ends.
func tempAudit(t *testing.T) (string, *audit.Writer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return path, w
}

// lateCall posts a call_tool of server and name with a large argument, and
// has go-sdk begin it only after its caller has gone and its POST has
// ended, taking the lifted strings with it; it returns the call's audit
// line, once written, and the face, with colibri's own log (debug) in logs.
func lateCall(t *testing.T, server, name string) (rec map[string]any, line []byte, f *rawHTTP, logs *syncbuf.Buffer) {
	t.Helper()
	auditPath, w := tempAudit(t)
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
	logs = &syncbuf.Buffer{}
	table := bulk.New(bulkMin)
	f = newRawHTTP(t, table, warmFake(), tools.Options{Audit: w,
		Logger: slog.New(reqctx.Handler(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))}, gate)
	ctx, gone := context.WithCancel(t.Context())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		if resp := f.postOrErr(ctx, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tools.CallToolTool+
			`","arguments":{"server":"`+server+`","name":"`+name+`","arguments":{"message":"`+strings.Repeat("m", 2*bulkMin)+`"}}}}`); resp != nil {
			resp.Body.Close()
		}
	}()
	<-entered
	gone()
	<-ended
	f.waitPOSTEnded(table)
	close(proceed)
	testwait.Eventually(t, "the audit line", func() bool {
		line, _ = os.ReadFile(auditPath)
		return len(line) > 0
	})
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatalf("%v: %q", err, line)
	}
	return rec, line, f, logs
}

// A call that go-sdk begins only after its POST has ended (its caller gone,
// and with it the strings lifted from its arguments) does not run, and is
// audited as a failed call all the same: one line, error kind internal,
// with no digest of arguments colibri no longer holds.
func TestBulkHTTPCallBeginningAfterItsPOSTIsAudited(t *testing.T) {
	t.Parallel()
	rec, line, f, logs := lateCall(t, "warm", "echo")
	if rec["server"] != "warm" || rec["tool"] != "echo" || rec["outcome"] != "error" || rec["error_kind"] != "internal" || rec["args"] != nil {
		t.Errorf("audit line %s, want warm/echo, outcome error, error_kind internal, no args", line)
	}
	// colibri's line about the refusal is found by the audit line's id.
	if id, _ := rec["id"].(string); !strings.Contains(logs.String(), "a call began after its caller had gone; its large strings are gone, so it does not run\" request_id="+id+"\n") {
		t.Errorf("no log line of the refusal with request_id %q:\n%s", id, logs.String())
	}
	if strings.Contains(f.logs.String()+logs.String(), "colibri-bulk-") {
		t.Error("a reference reached colibri's log")
	}
}

// A refused call whose server and tool names were themselves large, and
// lifted, is audited without them: their strings are gone, and what stands
// in their place (a reference, carrying the table's secret marker) never
// reaches the audit log or colibri's log.
func TestBulkHTTPRefusedCallNamesNoReference(t *testing.T) {
	t.Parallel()
	rec, line, f, logs := lateCall(t, strings.Repeat("s", 2*bulkMin), strings.Repeat("n", 2*bulkMin))
	if rec["server"] != nil || rec["tool"] != nil || rec["outcome"] != "error" || rec["error_kind"] != "internal" {
		t.Errorf("audit line %s, want no server or tool (their strings are gone), outcome error, error_kind internal", line)
	}
	if strings.Contains(string(line), "colibri-bulk-") {
		t.Errorf("a reference reached the audit log: %s", line)
	}
	if strings.Contains(logs.String(), "colibri-bulk-") || strings.Contains(f.logs.String(), "colibri-bulk-") {
		t.Errorf("a reference reached colibri's log:\n%s\n%s", logs.String(), f.logs.String())
	}
}

// The same over a warm server colibri starts: the call that was left by its
// caller must not break the warm server's connection for the next caller.
func TestBulkHTTPCallerGoneLeavesTheWarmServerWorking(t *testing.T) {
	t.Parallel()
	gate, pids := filepath.Join(t.TempDir(), "gate"), t.TempDir()
	reg := &registry.Registry{Servers: map[string]*registry.Server{
		"warm": {Name: "warm", Command: fakeBin, Args: []string{"gated"}, Lifecycle: registry.Persistent,
			Env: map[string]string{"FAKEMCP_GATE": gate, "FAKEMCP_PIDS": pids}},
	}}
	table := bulk.New(bulkMin)
	f := newRawHTTP(t, table, reg, tools.Options{})
	msg := strings.Repeat("m", 3*bulkMin)
	ctx, gone := context.WithCancel(t.Context())
	sent := make(chan struct{})
	outcome := make(chan string, 1) // what the call's POST got
	go func() {
		defer close(sent)
		resp := f.postOrErr(ctx, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tools.CallToolTool+`","arguments":{"server":"warm","name":"any","arguments":{"message":"`+msg+`"}}}}`)
		if resp == nil {
			outcome <- "no answer (the request failed)"
			return
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		outcome <- fmt.Sprintf("%d %q", resp.StatusCode, b)
	}()
	// The call starts the warm server (it records its pid), or its POST is
	// answered first: then it never will. (A call that cannot start it
	// within the host's timeout is answered too; twice that is a hang.)
	for hang := time.After(2 * rawHostTimeout); ; {
		if ents, _ := os.ReadDir(pids); len(ents) > 0 {
			break
		}
		select {
		case o := <-outcome:
			t.Fatalf("the call's POST was answered before the call started the warm server: %s", o)
		case <-hang:
			t.Fatal("the call did not start the warm server, and its POST is still open")
		case <-time.After(5 * time.Millisecond):
		}
	}
	gone()
	<-sent
	f.waitPOSTEnded(table)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		resp := f.post(t.Context(), `{"jsonrpc":"2.0","id":`+strconv.Itoa(100+i)+`,"method":"tools/call","params":{"name":"`+tools.CallToolTool+`","arguments":{"server":"warm","name":"any","arguments":{}}}}`)
		data := f.answer(resp)
		if len(data) != 1 || !strings.Contains(data[0], `"polite"`) {
			t.Errorf("call %d after the caller left: %.400q", i, data)
		}
	}
}

// runHostileHTTP POSTs the hostile lines and returns the answers by id (or
// the HTTP status of a POST refused), once every POST has ended.
func runHostileHTTP(t *testing.T, table *bulk.Table, aggregate bool) (map[string]any, string) {
	t.Helper()
	auditPath, w := tempAudit(t)
	f := newRawHTTP(t, table, warmFake(), tools.Options{Audit: w, Aggregate: aggregate})
	if aggregate { // the hosted list, before a call names warm__echo
		f.answer(f.post(t.Context(), `{"jsonrpc":"2.0","id":"list","method":"tools/list"}`))
	}
	answers := map[string]any{}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var mu sync.Mutex
	for k, l := range hostileLines(aggregate) {
		if strings.Contains(l[0], `"id":16,`) || strings.Contains(l[0], "notifications/cancelled") {
			// A call in flight whose id is reused, then cancelled: over
			// HTTP, nothing orders the three POSTs (go-sdk writes a POST's
			// headers with its first event).
			continue
		}
		ended := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(ended)
			resp := f.postOrErr(ctx, l[0])
			if resp == nil {
				return
			}
			data := f.answer(resp)
			mu.Lock()
			defer mu.Unlock()
			for _, d := range data {
				if strings.Contains(d, "colibri-bulk-") {
					t.Errorf("line %d: a reference was written to the caller: %.300q", k, d)
				}
				var v map[string]any
				if err := json.Unmarshal([]byte(d), &v); err != nil {
					t.Errorf("line %d: %v: %.300q", k, err, d)
					continue
				}
				if id, _ := json.Marshal(v["id"]); l[1] != "" && string(id) == l[1] {
					answers[l[1]] = v
				}
			}
			if l[1] != "" && answers[l[1]] == nil {
				answers[l[1]] = resp.StatusCode // refused
			}
		}()
		if l[1] != "" {
			<-ended
		}
	}
	cancel()
	wg.Wait()
	return answers, auditPath
}

// A batch (protocol 2025-03-26 and before allow them over HTTP) of two calls
// with large arguments: each answered with its own strings, nothing left in
// the table.
func TestBulkHTTPBatchOfCalls(t *testing.T) {
	t.Parallel()
	table := bulk.New(bulkMin)
	f := newRawHTTP(t, table, warmFake(), tools.Options{})
	one, two := strings.Repeat("1", 3*bulkMin), strings.Repeat("2", 3*bulkMin)
	call := func(id, msg string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tools.CallToolTool + `","arguments":{"server":"warm","name":"echo","arguments":{"message":"` + msg + `"}}}}`
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.url, strings.NewReader("["+call("1", one)+","+call("2", two)+"]"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	req.Header.Set("Mcp-Session-Id", f.session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range f.answer(resp) {
		var v struct {
			ID     json.Number
			Result *mcp.CallToolResult
		}
		if err := json.Unmarshal([]byte(d), &v); err != nil || v.Result == nil {
			t.Fatalf("%v: %.300q", err, d)
		}
		got[v.ID.String()] = textOf(t, v.Result)
	}
	if got["1"] != "Echo: "+one || got["2"] != "Echo: "+two {
		t.Errorf("answers %d: 1 %.40q…, 2 %.40q…", len(got), got["1"], got["2"])
	}
	waitEmpty(t, table)
}

// A caller that hangs up while a large answer is being written to it: the
// strings of the call and of its result are released, and the warm server
// goes on serving.
func TestBulkHTTPCallerGoneMidAnswer(t *testing.T) {
	t.Parallel()
	table := bulk.New(bulkMin)
	f := newRawHTTP(t, table, warmFake(), tools.Options{})
	msg := strings.Repeat("m", 4<<20)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tools.CallToolTool + `","arguments":{"server":"warm","name":"echo","arguments":{"message":"` + msg + `"}}}}`
	conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(f.url, "http://"), "/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s", conn.RemoteAddr(), f.session, len(body), body)
	// The answer has begun: its headers and the start of its event.
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	start := make([]byte, 64<<10)
	if n, err := io.ReadFull(conn, start); err != nil {
		t.Fatalf("reading the start of the answer: %v: %.300q", err, start[:n])
	}
	conn.Close()
	waitEmpty(t, table)
	data := f.answer(f.post(t.Context(), `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"`+tools.CallToolTool+`","arguments":{"server":"warm","name":"echo","arguments":{"message":"again"}}}}`))
	if len(data) != 1 || !strings.Contains(data[0], `"Echo: again"`) {
		t.Errorf("the next call: %.300q", data)
	}
}
