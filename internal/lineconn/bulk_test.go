package lineconn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
)

// bulkPeer is a connection with a bulk table, and the hosted server's end
// of it, driven by hand.
type bulkPeer struct {
	t     *testing.T
	table *bulk.Table
	conn  mcp.Connection
	sent  *bufio.Reader  // what the connection wrote
	reply *io.PipeWriter // what the server answers
}

func newBulkPeer(t *testing.T) *bulkPeer {
	t.Helper()
	table := bulk.New(1024)
	toConn, reply := io.Pipe()
	sentR, sentW := io.Pipe()
	conn, err := (&Transport{Reader: toConn, Writer: sentW, Bulk: table}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &bulkPeer{t: t, table: table, conn: conn, sent: bufio.NewReaderSize(sentR, 1<<20), reply: reply}
}

// call writes a request and returns the line the server reads.
func (p *bulkPeer) call(ctx context.Context, id int64, method, params string) string {
	p.t.Helper()
	got := make(chan string, 1)
	go func() {
		l, _ := p.sent.ReadString('\n')
		got <- l
	}()
	if err := p.conn.Write(ctx, &jsonrpc.Request{ID: mustID(id), Method: method, Params: json.RawMessage(params)}); err != nil {
		p.t.Fatalf("write: %v", err)
	}
	return <-got
}

// answer has the server write line, and returns what the connection reads.
func (p *bulkPeer) answer(line string) *jsonrpc.Response {
	p.t.Helper()
	go io.WriteString(p.reply, line+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg, err := p.conn.Read(ctx)
	if err != nil {
		p.t.Fatalf("read: %v", err)
	}
	return msg.(*jsonrpc.Response)
}

func (p *bulkPeer) waitEmpty() {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.table.Len() != 0 {
		if time.Now().After(deadline) {
			p.t.Fatalf("the table still holds %d strings", p.table.Len())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var bigText = strings.Repeat("t", 4096)

func resultLine(id int) string {
	return `{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"result":{"content":[{"type":"text","text":"` + bigText + `"},` +
		`{"type":"image","mimeType":"image/png","data":"` + strings.Repeat("QUFB", 1024) + `"}],"structuredContent":{"s":"` + bigText + `"}}}`
}

// requestCtx is ctx carrying a request of the caller's with no lifted
// argument (as tools joins a call: bulk.Table.Join), let go when ctx is
// done (the call has returned already).
func requestCtx(table *bulk.Table, ctx context.Context) context.Context {
	ctx, leave, err := table.Join(ctx, []byte(`{}`))
	if err != nil {
		panic(err)
	}
	leave()
	return ctx
}

// A hosted result's large strings are lifted for the request its call was
// written for, and released once that request is let go.
func TestBulkResultLiftedForItsRequest(t *testing.T) {
	p := newBulkPeer(t)
	ctx, end := context.WithCancel(context.Background())
	scoped := requestCtx(p.table, ctx)
	p.call(scoped, 1, "tools/call", `{"name":"echo"}`)
	r := p.answer(resultLine(1))
	if n := bytes.Count(r.Result, []byte("colibri-bulk-")); n != 2 {
		t.Fatalf("%d references in the result, want 2 (the text and the structured string; never the image's base64): %.300s", n, r.Result)
	}
	if p.table.Len() != 2 {
		t.Fatalf("%d strings in the table, want 2", p.table.Len())
	}
	end() // the caller's request is answered
	p.waitEmpty()
}

func TestBulkResultWholeWithoutALiveRequest(t *testing.T) {
	p := newBulkPeer(t)
	// No request: colibri's command line.
	p.call(context.Background(), 1, "tools/call", `{"name":"echo"}`)
	if r := p.answer(resultLine(1)); bytes.Contains(r.Result, []byte("colibri-bulk-")) {
		t.Fatal("a result was lifted for a call made for no request")
	}
	// A request let go before the answer came (the caller gave up).
	ctx, end := context.WithCancel(context.Background())
	req := requestCtx(p.table, ctx)
	p.call(req, 2, "tools/call", `{"name":"echo"}`)
	end()
	for deadline := time.Now().Add(10 * time.Second); bulk.OwnerFrom(req).Live(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request was not let go within 10s of its context")
		}
	}
	if r := p.answer(resultLine(2)); bytes.Contains(r.Result, []byte("colibri-bulk-")) {
		t.Fatal("a result was lifted for a request let go")
	}
	// Not a tools/call: a list is cached beyond any request.
	ctx3, end3 := context.WithCancel(context.Background())
	defer end3()
	p.call(requestCtx(p.table, ctx3), 3, "tools/list", `{}`)
	if r := p.answer(resultLine(3)); bytes.Contains(r.Result, []byte("colibri-bulk-")) {
		t.Fatal("the answer to a tools/list was lifted")
	}
	p.waitEmpty()
}

func TestBulkWriteLowers(t *testing.T) {
	p := newBulkPeer(t)
	orig := `{"name":"echo","arguments":{"message":"` + bigText + `"}}`
	lifted, refs := p.table.Lift([]byte(`{"params":`+orig+`}`), "params", "arguments")
	if len(refs) != 1 {
		t.Fatalf("%d refs", len(refs))
	}
	defer p.table.Release(refs...)
	var params struct {
		P json.RawMessage `json:"params"`
	}
	json.Unmarshal(lifted, &params)
	line := p.call(context.Background(), 1, "tools/call", string(params.P))
	if want := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + orig + "}\n"; line != want {
		t.Fatalf("the server read %.200q…, want the arguments as the caller sent them", line)
	}
	// A reference the table no longer has is never sent.
	p.table.Release(refs...)
	go io.Copy(io.Discard, p.sent) // were it written, the test would not hang
	if err := p.conn.Write(context.Background(), &jsonrpc.Request{ID: mustID(2), Method: "tools/call", Params: params.P}); err == nil {
		t.Fatal("a message with a released reference was written")
	}
}

func mustID(n int64) jsonrpc.ID {
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		panic(err)
	}
	return id
}

// A hosted server that answers a call twice: the second answer belongs to
// no call awaited (go-sdk drops it), so it is decoded whole, even while
// another call awaits its own, and none of its strings stays in the table.
func TestBulkResultAnsweredTwice(t *testing.T) {
	p := newBulkPeer(t)
	ctx, end := context.WithCancel(context.Background())
	req := requestCtx(p.table, ctx)
	p.call(req, 1, "tools/call", `{"name":"echo"}`)
	p.call(req, 2, "tools/call", `{"name":"echo"}`) // still awaited below
	if r := p.answer(resultLine(1)); bytes.Count(r.Result, []byte("colibri-bulk-")) != 2 {
		t.Fatalf("the first answer was not lifted: %.200s", r.Result)
	}
	if r := p.answer(resultLine(1)); bytes.Contains(r.Result, []byte("colibri-bulk-")) {
		t.Fatalf("the second answer to call 1 was lifted: %.200s", r.Result)
	}
	if n := p.table.Len(); n != 2 {
		t.Fatalf("%d strings in the table, want the first answer's 2", n)
	}
	end()
	p.waitEmpty()
}
