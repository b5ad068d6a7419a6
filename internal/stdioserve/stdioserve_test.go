package stdioserve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session is a go-sdk server on a Transport, driven with raw lines.
type session struct {
	t       *testing.T
	in      *io.PipeWriter
	out     *bufio.Reader
	done    chan error
	logs    chan string // messages the transport logged
	started chan struct{}
	release chan struct{}
}

func newSession(t *testing.T, maxBytes int, drain time.Duration) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1),
		logs: make(chan string, 100), started: make(chan struct{}, 10), release: make(chan struct{})}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		s.started <- struct{}{}
		select {
		case <-s.release:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	tr := &Transport{Reader: inR, Writer: outW, MaxMessageBytes: maxBytes, DrainTimeout: drain,
		Logger: slog.New(chanHandler(s.logs))}
	go func() {
		s.done <- server.Run(context.Background(), tr)
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := s.recv(); r.Result == nil {
		s.t.Fatalf("initialize: %+v", r)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *session) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("writing: %v", err)
	}
}

type response struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	HasID bool `json:"-"`
}

// recv reads the next line, within a deadline.
func (s *session) recv() response {
	s.t.Helper()
	type lineOrErr struct {
		line string
		err  error
	}
	ch := make(chan lineOrErr, 1)
	go func() {
		l, err := s.out.ReadString('\n')
		ch <- lineOrErr{l, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			s.t.Fatalf("reading a response: %v (the session ended?)", r.err)
		}
		var resp response
		if err := json.Unmarshal([]byte(r.line), &resp); err != nil {
			s.t.Fatalf("response %q: %v", r.line, err)
		}
		var raw map[string]json.RawMessage
		json.Unmarshal([]byte(r.line), &raw)
		_, resp.HasID = raw["id"]
		return resp
	case <-time.After(10 * time.Second):
		s.t.Fatal("no response within 10s")
	}
	return response{}
}

type chanHandler chan string

func (h chanHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h chanHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case h <- r.Message:
	default:
	}
	return nil
}
func (h chanHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h chanHandler) WithGroup(string) slog.Handler      { return h }

func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
}

// Each bad line gets its JSON-RPC error, and the next request on the same
// session is answered.
func TestBadLinesDoNotEndTheSession(t *testing.T) {
	const limit = 64 << 10
	s := newSession(t, limit, time.Second)
	for i, c := range []struct {
		name string
		line string
		code int
		id   any // nil: "id": null
	}{
		{"not JSON", `this is not json`, -32700, nil},
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":"pi`, -32700, nil},
		{"two values", `{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, -32700, nil},
		{"empty batch", `[]`, -32600, nil},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -32600, nil},
		{"1001 deep", nested(1001), -32600, nil},
		{"1001 deep params", `{"jsonrpc":"2.0","id":7,"method":"ping","params":` + nested(1000) + `}`, -32600, 7.0},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":3,"method":"ping"}`, -32600, 3.0},
		{"no jsonrpc", `{"id":"four","method":"ping"}`, -32600, "four"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, nil},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, nil},
		{"number", `42`, -32600, nil},
		{"over the limit", `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2*limit) + `"}}`, -32600, nil},
	} {
		s.send(c.line)
		r := s.recv()
		if r.Error == nil || r.Error.Code != c.code || r.ID != c.id || !r.HasID {
			t.Errorf("%s: got %+v (error %+v), want code %d and id %v", c.name, r, r.Error, c.code, c.id)
		}
		id := 100 + i
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
		if r := s.recv(); r.Error != nil || r.ID != float64(id) {
			t.Fatalf("after %s, ping %d: %+v", c.name, id, r)
		}
	}
	// A message just under the limit still passes.
	s.send(`{"jsonrpc":"2.0","id":500,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", limit-100) + `"}}}`)
	if r := s.recv(); r.Error != nil || r.ID != 500.0 {
		t.Errorf("a message under the limit: %+v", r)
	}
	// Blank lines and CRLF endings are no messages and no errors.
	s.send("")
	s.send(`{"jsonrpc":"2.0","id":501,"method":"ping"}` + "\r")
	if r := s.recv(); r.Error != nil || r.ID != 501.0 {
		t.Errorf("CRLF: %+v", r)
	}
}

// On the end of the input, a call in flight is answered before the session
// ends.
func TestEOFAnswersCallsInFlight(t *testing.T) {
	s := newSession(t, 0, 10*time.Second)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	<-s.started
	s.in.Close()
	waitLog(t, s.logs, "input ended")
	close(s.release)
	r := s.recv()
	if r.Error != nil || r.ID != 1.0 || !strings.Contains(string(r.Result), "released") {
		t.Fatalf("the call in flight at EOF: %+v (%s)", r, r.Result)
	}
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not end after the drain")
	}
}

// A call that never finishes holds the end of the session no longer than
// DrainTimeout.
func TestEOFDrainIsBounded(t *testing.T) {
	const drain = 300 * time.Millisecond
	s := newSession(t, 0, drain)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	<-s.started
	start := time.Now()
	s.in.Close()
	go io.Copy(io.Discard, s.out)
	select {
	case <-s.done:
		if d := time.Since(start); d < drain {
			t.Errorf("the session ended after %v, before the drain bound %v", d, drain)
		}
	case <-time.After(drain + 5*time.Second):
		t.Fatal("the drain was not bounded")
	}
}

// A cancelled call is not waited for at EOF.
func TestEOFDoesNotWaitForCancelled(t *testing.T) {
	s := newSession(t, 0, time.Minute)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	<-s.started
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	s.in.Close()
	go io.Copy(io.Discard, s.out)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the session waited for a cancelled call")
	}
}

func waitLog(t *testing.T, logs chan string, substr string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-logs:
			if strings.Contains(m, substr) {
				return
			}
		case <-deadline:
			t.Fatalf("never logged %q", substr)
		}
	}
}
