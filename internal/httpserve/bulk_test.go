package httpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
)

// The face's own share of moving large strings by reference (bulk.go). What
// a caller sees of a hosted call through it, over Streamable HTTP and SSE,
// is tested with the tools and the host in tools/bulk_test.go.

// With a table, the body bound is still go-sdk's answer: 413, on /mcp, for a
// body read past it, and nothing lifted from it.
func TestBulkBodyLimit(t *testing.T) {
	table := bulk.New(1 << 10)
	ts := start(t, Options{MaxBodyBytes: 4000, Bulk: table})
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"pad":"` + strings.Repeat("p", 5000) + `"}}}`
	if code, _, body := rawRequest(t, http.MethodPost, ts.URL(), "", nil, big); code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "exceeds 4000 bytes") {
		t.Errorf("/mcp: %d %q, want 413 and go-sdk's reason", code, body)
	}
	if n := table.Lifted(); n != 0 {
		t.Errorf("%d strings lifted from a body over the bound", n)
	}
}

// Only a tools/call's arguments are lifted: another request with a large
// string under params.arguments (prompts/get) reaches go-sdk whole, and a
// handler reads the string itself, not a reference.
func TestBulkOnlyToolsCallsAreLifted(t *testing.T) {
	table := bulk.New(1 << 10)
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s.AddPrompt(&mcp.Prompt{Name: "p", Arguments: []*mcp.PromptArgument{{Name: "text"}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		text := req.Params.Arguments["text"]
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text[:20]}}}}, nil
	})
	ts := start(t, Options{Server: s, Bulk: table})
	cs := connect(t, ts.URL(), "")
	res, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "p", Arguments: map[string]string{"text": strings.Repeat("t", 8<<10)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Messages[0].Content.(*mcp.TextContent).Text; got != strings.Repeat("t", 20) {
		t.Errorf("the prompt's handler read %q, want the argument itself", got)
	}
	if table.Len() != 0 {
		t.Errorf("the table holds %d strings after the request", table.Len())
	}
}

// A message that refers to a string the table does not have is never
// written as it is: an answer becomes an internal error under its id; any
// other message is dropped. Both in an SSE event and in a JSON body.
func TestBulkUnlowerableAnswer(t *testing.T) {
	table := bulk.New(1 << 10)
	// A reference of this table that was lifted and released: the marker is
	// the table's, so Lower refuses it.
	lifted, refs := table.Lift([]byte(`{"params":{"arguments":{"x":"`+strings.Repeat("x", 2<<10)+`"}}}`), "params", "arguments")
	table.Release(refs...)
	var v struct {
		Params struct{ Arguments struct{ X string } }
	}
	if err := json.Unmarshal(lifted, &v); err != nil || !strings.HasPrefix(v.Params.Arguments.X, "colibri-bulk-") {
		t.Fatalf("no reference to work with: %v %q", err, lifted)
	}
	released := v.Params.Arguments.X
	// One it never issued (only colibri's own bug, or a leaked marker,
	// could put it in a message).
	unknown := released[:strings.LastIndexByte(released, '-')+1] + "999"
	for _, r := range []struct{ name, ref, level string }{
		// Released: the message was written after its call had ended (a
		// cancelled call's answer; go-sdk still writes it): expected.
		{"released", released, "level=DEBUG"},
		{"never issued", unknown, "level=ERROR"},
		// A released one does not hide a fault after it in the same message.
		{"released, then a stray marker", released + `"},{"type":"text","text":"bad: ` + unknown, "level=ERROR"},
	} {
		ref := r.ref
		answer := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + ref + `"}]}}`
		notification := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + ref + `"}}`
		for _, c := range []struct{ name, write, want string }{
			{"sse answer", "event: message\nid: s_1\ndata: " + answer + "\n\n", "event: message\nid: s_1\ndata: " + lostJSON(t, 7) + "\n\n"},
			{"json answer", answer, lostJSON(t, 7)},
			{"sse notification", "event: message\ndata: " + notification + "\n\n", ""},
			{"plain text", "colibri-bulk-but-not-json " + ref, ""},
		} {
			rec := httptest.NewRecorder()
			logs := &bytes.Buffer{}
			w := &lowering{ResponseWriter: rec, table: table, log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			if n, err := w.Write([]byte(c.write)); err != nil || n != len(c.write) {
				t.Errorf("%s, %s: Write: %d, %v", r.name, c.name, n, err)
			}
			if got := rec.Body.String(); got != c.want {
				t.Errorf("%s, %s: wrote\n%q\nwant\n%q", r.name, c.name, got, c.want)
			}
			level := r.level
			if c.name == "plain text" {
				level = "level=ERROR" // a marker outside a string is never expected
			}
			if strings.Contains(logs.String(), "colibri-bulk-") || !strings.Contains(logs.String(), "no longer has") || !strings.Contains(logs.String(), level) {
				t.Errorf("%s, %s: the log should say what happened, at %s, without the reference: %s", r.name, c.name, level, logs)
			}
		}
	}
}

func lostJSON(t *testing.T, id int64) string {
	t.Helper()
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: mustID(t, id), Error: &jsonrpc.Error{
		Code: jsonrpc.CodeInternalError, Message: "colibri: internal error: part of this message was lost"}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustID(t *testing.T, id int64) jsonrpc.ID {
	t.Helper()
	v, err := jsonrpc.MakeID(float64(id))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// bulkCall POSTs a tools/call of tool "t" whose argument text is a string
// the face lifts, on a session of ts, and returns when the call has entered
// the MCP server's outermost middleware (held there until proceed is
// closed): the caller then goes away (gone), and the POST ends.
func bulkCall(t *testing.T, ts *testServer, text string, entered <-chan struct{}) (gone func()) {
	t.Helper()
	cs := connect(t, ts.URL(), "")
	ctx, cancel := context.WithCancel(t.Context())
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"text":"` + text + `"}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL(), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body) // the stream opens at once (its priming event): read it until the caller leaves
			resp.Body.Close()
		}
	}()
	<-entered
	return func() {
		cancel()
		<-done
		if !ts.calls.wait(time.Now().Add(10 * time.Second)) {
			t.Fatal("the POST did not end when its caller left")
		}
	}
}

// gateCalls adds, outside every other middleware, one that holds each
// tools/call until proceed is closed, and sends what the rest returned.
func gateCalls(s *mcp.Server) (entered, proceed chan struct{}, out chan error) {
	entered, proceed, out = make(chan struct{}, 1), make(chan struct{}), make(chan error, 1)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			entered <- struct{}{}
			<-proceed
			res, err := next(ctx, method, req)
			out <- err
			return res, err
		}
	})
	return entered, proceed, out
}

// joinCalls adds the middleware by which a call holds its request's
// strings while it runs, as colibri's own server has (tools: joinBulk): a
// call whose strings were let go answers ErrReleased's internal error.
func joinCalls(s *mcp.Server, table *bulk.Table) {
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if method != "tools/call" || !ok {
				return next(ctx, method, req)
			}
			ctx, leave, err := table.Join(ctx, p.Arguments)
			defer leave()
			if err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
			}
			return next(ctx, method, req)
		}
	})
}

// A call whose caller has gone still runs (go-sdk cancels a call only on
// notifications/cancelled, before protocol 2026-07-28): it holds the
// request the face lifted its strings for, reads them however late, and
// they are released when it returns.
func TestBulkCallOutlivingItsPOSTKeepsItsArguments(t *testing.T) {
	table := bulk.New(1 << 10)
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	running, proceed := make(chan struct{}, 1), make(chan struct{})
	read := make(chan string, 1)
	mcp.AddTool(s, &mcp.Tool{Name: "t"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		running <- struct{}{}
		<-proceed
		v, _ := table.Value(in.Text)
		read <- v
		return &mcp.CallToolResult{}, nil, nil
	})
	joinCalls(s, table)
	ts := start(t, Options{Server: s, Bulk: table})
	text := strings.Repeat("t", 4<<10)
	gone := bulkCall(t, ts, text, running)
	gone()
	close(proceed)
	if v := <-read; v != text {
		t.Errorf("the call read %d bytes %.60q, want the %d bytes its caller sent", len(v), v, len(text))
	}
	testwait.Eventually(t, "the table to be empty", func() bool { return table.Len() == 0 })
}

// A call that begins only after its POST has ended (its caller gone) has
// lost its lifted strings: the face let go of them when the POST ended,
// and the call cannot hold them any more (tools refuses it then); nothing
// stays in the table.
func TestBulkCallBeginningAfterItsPOSTDoesNotRun(t *testing.T) {
	table := bulk.New(1 << 10)
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ran := make(chan string, 1)
	mcp.AddTool(s, &mcp.Tool{Name: "t"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		ran <- in.Text
		return &mcp.CallToolResult{}, nil, nil
	})
	joinCalls(s, table)
	ts := start(t, Options{Server: s, Bulk: table})
	entered, proceed, out := gateCalls(s)
	gone := bulkCall(t, ts, strings.Repeat("t", 4<<10), entered)
	gone()
	if n := table.Len(); n != 0 {
		t.Errorf("the table holds %d strings after the POST ended, with no call holding them", n)
	}
	close(proceed)
	var rpcErr *jsonrpc.Error
	if err := <-out; !errors.As(err, &rpcErr) || !strings.HasSuffix(rpcErr.Message, bulk.ErrReleased.Error()) {
		t.Errorf("the call: %v, want its strings gone (%v)", err, bulk.ErrReleased)
	}
	select {
	case v := <-ran:
		t.Errorf("the tool ran, on %.60q", v)
	default:
	}
}

// A body is read whole in pieces of at most 64 KiB, whatever length it
// claims; never past the bound.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("b", 100_000)
	for _, c := range []struct {
		name          string
		body          io.Reader
		length, limit int64
		want          int
	}{
		{"whole", strings.NewReader(body), -1, 1 << 20, 100_000},
		{"its length", strings.NewReader(body), 100_000, 1 << 20, 100_000},
		{"a length too short", strings.NewReader(body), 10, 1 << 20, 100_000},
		{"a length too long", strings.NewReader(body), 5 << 20, 1 << 20, 100_000},
		{"a byte at a time", iotest.OneByteReader(strings.NewReader(body)), -1, 1 << 20, 100_000},
		{"past the bound", strings.NewReader(body), -1, 1000, 1001},
		{"past the bound, its length", strings.NewReader(body), 100_000, 1000, 1001},
		{"at the bound", strings.NewReader(body), -1, 100_000, 100_000},
		{"empty", strings.NewReader(""), -1, 1000, 0},
		{"empty, its length", strings.NewReader(""), 0, 1000, 0},
	} {
		parts, n, err := readBody(c.body, c.length, c.limit)
		got := bytes.Join(parts, nil)
		if err != nil || n != int64(c.want) || string(got) != body[:c.want] {
			t.Errorf("%s: %d bytes (n %d), %v; want %d", c.name, len(got), n, err, c.want)
		}
		for k, p := range parts {
			if len(p) > bodyPiece {
				t.Errorf("%s: piece %d of %d holds %d bytes, more than %d", c.name, k, len(parts), len(p), bodyPiece)
			}
		}
	}
	// A small body of the length it says costs its size, not a piece.
	small := strings.Repeat("s", 300)
	if allocs, _ := allocated(func() {
		if parts, n, err := readBody(strings.NewReader(small), int64(len(small)), 1<<20); err != nil || n != 300 || len(parts) != 1 || cap(parts[0]) > 512 {
			t.Fatalf("a 300-byte body: %d parts, n %d, %v", len(parts), n, err)
		}
	}); allocs > 3 {
		t.Errorf("a 300-byte body took %v allocations", allocs)
	}
	// A read error is returned with what came before it.
	if parts, n, err := readBody(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(io.ErrUnexpectedEOF)), -1, 1000); err != io.ErrUnexpectedEOF || n != 3 || string(bytes.Join(parts, nil)) != "abc" {
		t.Errorf("a failing body: %q, %d, %v", bytes.Join(parts, nil), n, err)
	}
	// An 8 MiB body is held once, in its pieces: nothing is grown by
	// copying, whatever length the caller claimed.
	big := strings.Repeat("b", 8<<20)
	if _, n := allocated(func() { readBody(strings.NewReader(big), -1, 16<<20) }); n > 8<<20+128<<10 {
		t.Errorf("reading an 8 MiB body allocated %d bytes, want its size and the list of its pieces", n)
	}
	// A body that ends early costs what came: a caller that says 16 MiB
	// and sends 10 bytes costs one piece.
	if _, n := allocated(func() {
		if parts, _, err := readBody(strings.NewReader("0123456789"), -1, 32<<20); err != nil || string(bytes.Join(parts, nil)) != "0123456789" {
			t.Fatalf("%q %v", parts, err)
		}
	}); n > bodyPiece+1024 {
		t.Errorf("a body of 10 bytes cost %d bytes", n)
	}
}

// With the bulk table, the face reads a body ahead of go-sdk only for a
// session the caller holds: a POST on another principal's session (403) or
// on no session known (404) is still refused before any of its body is read.
func TestBulkSessionRefusedBeforeBody(t *testing.T) {
	ts := start(t, Options{TokenFile: writeTokens(t, "alice alice-token\nbob bob-token\n"), Bulk: bulk.New(1 << 10)})
	alice := connect(t, ts.URL(), "alice-token")
	for _, c := range []struct {
		name, token, session string
		want                 int
	}{
		{"another's session", "bob-token", alice.ID(), http.StatusForbidden},
		{"no such session", "alice-token", "no-such-session", http.StatusNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ts.ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Headers announcing a body that never comes.
			fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
				"Authorization: Bearer %s\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: 100000\r\n\r\n", ts.ln.Addr(), c.token, c.session)
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer before the body: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("status %d, want %d", resp.StatusCode, c.want)
			}
		})
	}
	// And alice's own session takes a call.
	if got := whoami(t, alice); got != "alice|alice" {
		t.Errorf("alice's session: %q", got)
	}
}

// allocated is the fewest allocations, and the fewest bytes, that one run
// of f made over several runs. runtime.MemStats counts every goroutine's:
// what others allocate meanwhile (a server of an earlier test winding
// down, the runtime itself; under load, more of it lands in a run's
// window) only ever adds to a run's count, so the least is f's own.
func allocated(f func()) (allocs, bytes uint64) {
	allocs, bytes = math.MaxUint64, math.MaxUint64
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		allocs = min(allocs, after.Mallocs-before.Mallocs)
		bytes = min(bytes, after.TotalAlloc-before.TotalAlloc)
	}
	return allocs, bytes
}
