package lineconn

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// server is the other end of a Transport: what it reads of colibri's
// lines, and a writer to answer with.
type server struct {
	lines *bufio.Scanner
	out   *io.PipeWriter
}

func (s *server) next(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	if !s.lines.Scan() {
		t.Fatal("the connection wrote nothing more")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(s.lines.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func (s *server) say(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.out, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func directPair(t *testing.T) (*Transport, *conn, *server) {
	t.Helper()
	inR, inW := io.Pipe()   // server → colibri
	outR, outW := io.Pipe() // colibri → server
	tr := &Transport{Reader: inR, Writer: outW}
	c, err := tr.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return tr, c.(*conn), &server{lines: bufio.NewScanner(outR), out: inW}
}

// A request below go-sdk is written under an id of colibri's own and its
// answer comes back as read, never to Read; an error answer is the
// server's *jsonrpc.Error.
func TestCallAnswered(t *testing.T) {
	tr, c, srv := directPair(t)
	type got struct {
		res json.RawMessage
		err error
	}
	done := make(chan got, 1)
	go func() {
		res, err := tr.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"echo"}`))
		done <- got{res, err}
	}()
	m := srv.next(t)
	id := string(m["id"])
	if !strings.HasPrefix(id, `"colibri-direct-`) || string(m["method"]) != `"tools/call"` || string(m["params"]) != `{"name":"echo"}` {
		t.Fatalf("written: %v", m)
	}
	srv.say(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[],"extra":1}}`)
	if g := <-done; g.err != nil || string(g.res) != `{"content":[],"extra":1}` {
		t.Fatalf("answer %s, %v", g.res, g.err)
	}
	go func() {
		_, err := tr.Call(t.Context(), "tools/call", json.RawMessage(`{}`))
		done <- got{err: err}
	}()
	id = string(srv.next(t)["id"])
	srv.say(t, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32602,"message":"no"}}`)
	var rpcErr *jsonrpc.Error
	if g := <-done; !errors.As(g.err, &rpcErr) || rpcErr.Code != -32602 {
		t.Fatalf("error answer: %v", g.err)
	}
	// Neither answer reached go-sdk's side; what does next is go-sdk's.
	srv.say(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	if msg, err := read(t, c); err != nil || msg.(*jsonrpc.Response).ID.Raw() != int64(1) {
		t.Fatalf("Read: %v %v", msg, err)
	}
}

// A request whose context ends tells the server (notifications/cancelled
// under its id) and returns at once; its late answer is dropped, not
// handed to go-sdk.
func TestCallCancelled(t *testing.T) {
	tr, c, srv := directPair(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := tr.Call(ctx, "tools/call", json.RawMessage(`{}`))
		done <- err
	}()
	id := string(srv.next(t)["id"])
	cancel()
	m := srv.next(t) // (the pipe holds nothing: read before Call returns)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	json.Unmarshal(m["params"], &p)
	if string(m["method"]) != `"notifications/cancelled"` || string(p.RequestID) != id {
		t.Fatalf("after the cancel the server read %v, want notifications/cancelled for %s", m, id)
	}
	srv.say(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{"late":true}}`)
	srv.say(t, `{"jsonrpc":"2.0","method":"notifications/next"}`)
	if msg, err := read(t, c); err != nil || msg.(*jsonrpc.Request).Method != "notifications/next" {
		t.Fatalf("Read: %v %v (the late answer must be dropped)", msg, err)
	}
}

// The connection ending fails the requests waiting, and a request after
// it at once.
func TestCallConnectionEnds(t *testing.T) {
	tr, _, srv := directPair(t)
	done := make(chan error, 1)
	go func() {
		_, err := tr.Call(t.Context(), "tools/call", json.RawMessage(`{}`))
		done <- err
	}()
	srv.next(t)
	srv.out.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a request waiting when the connection ended succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a request waiting when the connection ended never returned")
	}
	if _, err := tr.Call(t.Context(), "tools/call", json.RawMessage(`{}`)); err == nil {
		t.Fatal("a request after the end succeeded")
	}
	if _, err := (&Transport{}).Call(t.Context(), "x", nil); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("before Connect: %v", err)
	}
}
