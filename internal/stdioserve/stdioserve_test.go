package stdioserve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session is a go-sdk server on a Transport, driven with raw lines.
type session struct {
	t       *testing.T
	in      *io.PipeWriter
	out     chan string // the lines the transport wrote, read as they come (closed at the end)
	done    chan error
	logs    chan string // messages the transport logged
	started chan struct{}
	release chan struct{}
	stopped chan struct{} // a wait call's context ended (the call was cancelled)
	step    chan float64  // a steps call reports this progress
	// handled receives each response go-sdk handed to the transport's
	// Write, once Write has returned (written, or dropped).
	handled chan *jsonrpc.Response
	// cancels receives the params of each notifications/cancelled that
	// the transport handed to go-sdk.
	cancels chan string
	// ended is closed when the transport reported the end of the input to
	// go-sdk (after its drain).
	ended chan struct{}
}

func newSession(t *testing.T, maxBytes int, drain time.Duration) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, out: make(chan string, 1000), done: make(chan error, 1),
		logs: make(chan string, 100), started: make(chan struct{}, 10), release: make(chan struct{}), stopped: make(chan struct{}, 10), step: make(chan float64),
		handled: make(chan *jsonrpc.Response, 1000), cancels: make(chan string, 100), ended: make(chan struct{})}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	released := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}
	mcp.AddTool(server, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		s.started <- struct{}{}
		select {
		case <-s.release:
			return released, nil, nil
		case <-ctx.Done():
			s.stopped <- struct{}{}
			return nil, nil, ctx.Err()
		}
	})
	// stubborn runs until released, cancelled or not (it says when it is).
	mcp.AddTool(server, &mcp.Tool{Name: "stubborn"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		s.started <- struct{}{}
		select {
		case <-s.release:
		case <-ctx.Done():
			s.stopped <- struct{}{}
			<-s.release
		}
		return released, nil, nil
	})
	// steps reports progress once for each value sent on s.step, until
	// released.
	mcp.AddTool(server, &mcp.Tool{Name: "steps"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		s.started <- struct{}{}
		for {
			select {
			case n := <-s.step:
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: n})
			case <-s.release:
				return released, nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
	})
	// pingback pings the caller: a request of colibri's own.
	mcp.AddTool(server, &mcp.Tool{Name: "pingback"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if err := req.Session.Ping(ctx, nil); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	// Read all the time: an answer nobody expected must not block the
	// transport (and with it the test's next write).
	go func() {
		defer close(s.out)
		r := bufio.NewReaderSize(outR, 1<<20)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			s.out <- l
		}
	}()
	tr := spyTransport{&Transport{Reader: inR, Writer: outW, MaxMessageBytes: maxBytes, DrainTimeout: drain,
		Logger: slog.New(chanHandler(s.logs))}, s.handled, s.cancels, s.ended, &sync.Once{}}
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

// recvRaw reads the next line as it is, within a deadline.
func (s *session) recvRaw() string {
	s.t.Helper()
	select {
	case l, ok := <-s.out:
		if !ok {
			s.t.Fatal("no more lines: the session ended")
		}
		return l
	case <-time.After(10 * time.Second):
		s.t.Fatal("no line within 10s")
		return ""
	}
}

// recv reads the next line, within a deadline.
func (s *session) recv() response {
	s.t.Helper()
	line := s.recvRaw()
	var resp response
	if err := json.Unmarshal([]byte(line), &resp); err != nil {
		s.t.Fatalf("response %q: %v", line, err)
	}
	var raw map[string]json.RawMessage
	json.Unmarshal([]byte(line), &raw)
	_, resp.HasID = raw["id"]
	return resp
}

// spyTransport reports the responses go-sdk writes, after the transport
// has handled them.
type spyTransport struct {
	*Transport
	handled chan *jsonrpc.Response
	cancels chan string
	ended   chan struct{}
	once    *sync.Once
}

func (t spyTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	return spyConn{c, t.handled, t.cancels, t.ended, t.once}, err
}

type spyConn struct {
	mcp.Connection
	handled chan *jsonrpc.Response
	cancels chan string
	ended   chan struct{}
	once    *sync.Once
}

func (c spyConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		c.once.Do(func() { close(c.ended) })
	}
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "notifications/cancelled" {
		select {
		case c.cancels <- string(r.Params):
		default:
		}
	}
	return msg, err
}

func (c spyConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if r, ok := msg.(*jsonrpc.Response); ok {
		select {
		case c.handled <- r:
		default: // no test waits for so many
		}
	}
	return err
}

// waitHandled waits until go-sdk has handed the transport its response to id.
func (s *session) waitHandled(id any) {
	s.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case r := <-s.handled:
			if r.ID.Raw() == id {
				return
			}
		case <-deadline:
			s.t.Fatalf("go-sdk never answered %v", id)
		}
	}
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
		// Ids go-sdk would answer as another id (-9223372036854775808,
		// 9007199254740992, 1, "\ufffd"): refused, never misattributed.
		{"id past 2^63", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, -32600, nil},
		{"id past 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, -32600, nil},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, nil},
		{"half a surrogate pair as id", `{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`, -32600, nil},
		{"invalid UTF-8 as id", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}", -32600, nil},
		// MCP: a request's id "MUST NOT be null" (go-sdk took it for a
		// notification and answered nothing).
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, nil},
		// A notification with an id (go-sdk acted on it and answered it).
		{"notification with an id", `{"jsonrpc":"2.0","id":8,"method":"notifications/cancelled","params":{"requestId":8}}`, -32600, 8.0},
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
	s.send("  \t ")
	s.send(`{"jsonrpc":"2.0","id":501,"method":"ping"}` + "\r")
	if r := s.recv(); r.Error != nil || r.ID != 501.0 {
		t.Errorf("CRLF: %+v", r)
	}
	// A notification written with "id": null is taken as one (no answer).
	s.send(`{"jsonrpc":"2.0","id":null,"method":"notifications/roots/list_changed"}`)
	// A byte order mark before a message is ignored (RFC 8259, 8.1).
	s.send("\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":502,"method":"ping"}`)
	if r := s.recv(); r.Error != nil || r.ID != 502.0 {
		t.Errorf("after a byte order mark: %+v", r)
	}
	// An id written with a fraction is not one every reader reads as the
	// integer (docs/protocol.md, "Strict reading"): refused, under no id;
	// the largest safe integers are answered under their own id.
	s.send(`{"jsonrpc":"2.0","id":503.0,"method":"ping"}`)
	if r := s.recv(); r.Error == nil || r.Error.Code != -32600 || r.ID != nil || !strings.Contains(r.Error.Message, "at /id") {
		t.Errorf("id 503.0: %+v, want -32600 at /id under no id", r)
	}
	s.send(`{"jsonrpc":"2.0","id":-9007199254740991,"method":"ping"}`)
	if r := s.recv(); r.Error != nil || r.ID != -9007199254740991.0 {
		t.Errorf("id -(2^53-1): %+v", r)
	}
}

// The limit is on the message: a line of exactly MaxMessageBytes passes,
// whether it ends in "\n", "\r\n" or the end of the input, and one byte more
// does not.
func TestLineLimitIsTheMessage(t *testing.T) {
	const limit = 300
	s := newSession(t, limit, time.Second)
	sized := func(id string, n int) string {
		m := `{"jsonrpc":"2.0","id":"` + id + `","method":"ping","params":{"_meta":{"p":""}}}`
		return strings.Replace(m, `"p":""`, `"p":"`+strings.Repeat("x", n-len(m))+`"`, 1)
	}
	for _, c := range []struct {
		id, end string
		size    int
		ok      bool
	}{
		{"lf", "\n", limit, true},
		{"crlf", "\r\n", limit, true},
		{"lf+1", "\n", limit + 1, false},
		{"crlf+1", "\r\n", limit + 1, false},
	} {
		io.WriteString(s.in, sized(c.id, c.size)+c.end)
		if r := s.recv(); c.ok != (r.Error == nil) || c.ok && r.ID != c.id || !c.ok && (r.Error.Code != -32600 || r.ID != nil) {
			t.Errorf("%d bytes ending %q: %+v (error %+v), want accepted %v", c.size, c.end, r, r.Error, c.ok)
		}
	}
	// At the end of the input, without a newline.
	io.WriteString(s.in, sized("eof+1", limit+1))
	s.in.Close()
	if r := s.recv(); r.Error == nil || r.Error.Code != -32600 || r.ID != nil {
		t.Errorf("%d bytes at the end of the input: %+v, want -32600", limit+1, r)
	}
	// A limit as large as an int can be does not wrap around.
	s = newSession(t, math.MaxInt, time.Second)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if r := s.recv(); r.Error != nil || r.ID != 1.0 {
		t.Errorf("a ping under the largest limit: %+v (error %+v)", r, r.Error)
	}
}

// A request that reuses the id of one in flight is answered -32600 under the
// null id (not its own, which would pass for the first one's answer), and
// logged; once a call is answered, its id is free again. A cancelled call is
// in flight until its handler returns.
func TestIDInUseIsRefused(t *testing.T) {
	s := newSession(t, 0, time.Second)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stubborn","arguments":{}}}`)
	<-s.started
	s.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if r := s.recv(); r.Error == nil || r.Error.Code != -32600 || r.ID != nil || !strings.Contains(r.Error.Message, "id 1 is already used") {
		t.Fatalf("a request reusing the id of one in flight: %+v (error %+v)", r, r.Error)
	}
	waitLog(t, s.logs, "answered with an error")
	// Any error about a line that carries the id of a call in flight goes
	// under the null id too.
	s.send(`{"jsonrpc":"1.0","id":1,"method":"ping"}`)
	if r := s.recv(); r.Error == nil || r.Error.Code != -32600 || r.ID != nil {
		t.Fatalf("a bad line with the id of a call in flight: %+v (error %+v)", r, r.Error)
	}
	// Cancelled, but still running: its id is still in use.
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	<-s.stopped
	s.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if r := s.recv(); r.Error == nil || r.Error.Code != -32600 || r.ID != nil {
		t.Fatalf("reusing the id of a cancelled call still running: %+v (error %+v)", r, r.Error)
	}
	close(s.release)
	s.waitHandled(int64(1))
	s.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if r := s.recv(); r.Error != nil || r.ID != 1.0 || string(r.Result) != "{}" {
		t.Fatalf("reusing the id once its call ended: %+v (error %+v), want the ping's answer", r, r.Error)
	}
}

// A call the caller cancelled gets no answer (MCP: the receiver "SHOULD NOT
// send a response for the cancelled request"); a cancellation that arrives
// after the answer, or names an id never seen, changes nothing, and a
// request that reuses the id is answered.
func TestCancelledCallGetsNoAnswer(t *testing.T) {
	s := newSession(t, 0, time.Second)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	<-s.started
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	<-s.stopped
	s.waitHandled(int64(1)) // go-sdk answered the cancelled call: the transport kept it back
	s.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if r := s.recv(); r.ID != 2.0 {
		t.Fatalf("after a cancelled call, the next line is %+v (error %+v), want the ping's answer", r, r.Error)
	}
	// Cancelled after its answer; then an id never seen; then id 2 reused.
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if r := s.recv(); r.ID != 2.0 || r.Error != nil {
		t.Fatalf("a request reusing an answered id: %+v (error %+v)", r, r.Error)
	}
	// Only the cancellation of a call in flight reached go-sdk: it cancels
	// asynchronously, and a late one would hit the call that reuses the id.
	if got := <-s.cancels; got != `{"requestId":1}` {
		t.Errorf("cancellation passed to go-sdk: %s, want the one of call 1", got)
	}
	select {
	case got := <-s.cancels:
		t.Errorf("a cancellation of no call in flight reached go-sdk: %s", got)
	default:
	}
	// A cancellation spelled in another case is not one: refused, as
	// something readers read two ways (docs/protocol.md, "Strict
	// reading"); one that carries an id is refused, not acted on.
	s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	<-s.started
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"RequestId":3}}`)
	if r := s.recv(); r.ID != nil || r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "/params/RequestId") {
		t.Fatalf("a cancellation spelled RequestId: %+v (error %+v), want -32602 at /params/RequestId", r, r.Error)
	}
	s.send(`{"jsonrpc":"2.0","id":9,"method":"notifications/cancelled","params":{"requestId":3}}`)
	if r := s.recv(); r.ID != 9.0 || r.Error == nil || r.Error.Code != -32600 {
		t.Fatalf("a notification with an id: %+v (error %+v), want -32600 under its id", r, r.Error)
	}
	// (What is checked is that nothing happens, which takes the time.)
	select {
	case <-s.stopped:
		t.Fatal("a notification with an id cancelled the call it named")
	case <-time.After(300 * time.Millisecond):
	}
	close(s.release)
	if r := s.recv(); r.ID != 3.0 || !strings.Contains(string(r.Result), "released") {
		t.Fatalf("a call whose cancellation go-sdk ignored: %+v, want its answer", r)
	}
}

// A response to a request colibri never made is dropped with a warning; one
// to colibri's own request reaches go-sdk.
func TestStrayResponseDropped(t *testing.T) {
	s := newSession(t, 0, time.Second)
	s.send(`{"jsonrpc":"2.0","id":99,"result":{}}`)
	waitLog(t, s.logs, "dropped a response to no request colibri made")
	s.send(`{"jsonrpc":"2.0","id":"x","error":{"code":-32603,"message":"no"}}`)
	waitLog(t, s.logs, "dropped a response to no request colibri made")
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pingback","arguments":{}}}`)
	ping := s.recv() // colibri's own ping to the caller
	id, _ := json.Marshal(ping.ID)
	s.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{}}`)
	if r := s.recv(); r.ID != 1.0 || !strings.Contains(string(r.Result), "pong") {
		t.Fatalf("the caller's answer to colibri's ping did not arrive: %+v (error %+v)", r, r.Error)
	}
	// Answered twice: the second is stray.
	s.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{}}`)
	waitLog(t, s.logs, "dropped a response to no request colibri made")
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

// A message cut short by the end of the input is answered -32700 (there is
// no id to read), and the session ends; a whole message without its newline
// at the end of the input is served.
func TestEOFMidLine(t *testing.T) {
	for _, c := range []struct {
		name, tail string
		code       int
	}{{"cut", `{"jsonrpc":"2.0","id":1,"method":"pi`, -32700}, {"whole", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0}} {
		t.Run(c.name, func(t *testing.T) {
			s := newSession(t, 0, time.Second)
			io.WriteString(s.in, c.tail)
			s.in.Close()
			r := s.recv()
			if c.code == 0 && (r.Error != nil || r.ID != 1.0) || c.code != 0 && (r.Error == nil || r.Error.Code != c.code || r.ID != nil) {
				t.Errorf("%q, then the end of the input: %+v (error %+v)", c.tail, r, r.Error)
			}
			select {
			case <-s.done:
			case <-time.After(5 * time.Second):
				t.Fatal("the session did not end")
			}
		})
	}
}

// A call that reports progress after the input has ended gets its progress
// through, then its answer, before the session ends.
func TestEOFLetsProgressThrough(t *testing.T) {
	s := newSession(t, 0, 10*time.Second)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"steps","arguments":{},"_meta":{"progressToken":"p"}}}`)
	<-s.started
	s.in.Close()
	waitLog(t, s.logs, "input ended")
	for _, n := range []float64{1, 2} {
		select {
		case s.step <- n:
		case <-time.After(10 * time.Second):
			t.Fatal("the call stopped when the input ended")
		}
		if r := s.recvRaw(); !strings.Contains(r, `"method":"notifications/progress"`) || !strings.Contains(r, fmt.Sprintf(`"progress":%v`, n)) {
			t.Fatalf("progress %v after the end of the input: %s", n, r)
		}
	}
	close(s.release)
	if r := s.recv(); r.ID != 1.0 || !strings.Contains(string(r.Result), "released") {
		t.Fatalf("the call's answer: %+v", r)
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
	select {
	case <-s.done:
		if d := time.Since(start); d < drain {
			t.Errorf("the session ended after %v, before the drain bound %v", d, drain)
		}
	case <-time.After(drain + 5*time.Second):
		t.Fatal("the drain was not bounded")
	}
}

// A cancelled call is not waited for at EOF, even while it still runs.
func TestEOFDoesNotWaitForCancelled(t *testing.T) {
	s := newSession(t, 0, time.Minute)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stubborn","arguments":{}}}`)
	<-s.started
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	<-s.stopped
	s.in.Close()
	select {
	case <-s.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the end of the input waited for a cancelled call")
	}
	close(s.release)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
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
