package httpserve

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
)

// holdServer is an MCP server with one tool, hold, that says when it runs and
// answers "released" once release is closed.
func holdServer() (srv *mcp.Server, entered chan struct{}, release chan struct{}) {
	entered, release = make(chan struct{}, 16), make(chan struct{})
	srv = mcp.NewServer(&mcp.Implementation{Name: "hold", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "hold"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		entered <- struct{}{}
		select {
		case <-release:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	return srv, entered, release
}

// connectOver opens a session over the named transport.
func connectOver(t *testing.T, ts *testServer, transport string) *mcp.ClientSession {
	t.Helper()
	var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: ts.URL(), DisableStandaloneSSE: true}
	if transport == "sse" {
		tr = &mcp.SSEClientTransport{Endpoint: ts.base + "/sse"}
	}
	cs, err := tryConnect(t, tr)
	if err != nil {
		t.Fatalf("connecting over %s: %v", transport, err)
	}
	return cs
}

// callHold starts a call of hold and returns where its outcome arrives.
func callHold(cs *mcp.ClientSession) <-chan string {
	out := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hold", Arguments: map[string]any{}})
		switch {
		case err != nil:
			out <- "error: " + err.Error()
		case res.IsError:
			out <- "isError"
		default:
			out <- res.Content[0].(*mcp.TextContent).Text
		}
	}()
	return out
}

func outcome(t *testing.T, out <-chan string) string {
	t.Helper()
	select {
	case got := <-out:
		return got
	case <-time.After(30 * time.Second):
		t.Fatal("the call never ended")
		return ""
	}
}

// rawSSE is an HTTP+SSE client that reads the event stream itself.
// (go-sdk's SSE client may report EOF for a message that arrives just before
// its stream ends: its Read picks between the two at random.)
type rawSSE struct {
	t        *testing.T
	endpoint string
	events   *bufio.Reader
}

func openSSE(t *testing.T, ts *testServer) *rawSSE {
	t.Helper()
	resp, err := http.Get(ts.base + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	c := &rawSSE{t: t, events: bufio.NewReader(resp.Body)}
	ev, data := c.next()
	if ev != "endpoint" {
		t.Fatalf("first event %q, want endpoint", ev)
	}
	c.endpoint = ts.base + data
	c.post(initialize)
	if _, data := c.next(); !strings.Contains(data, `"id":1`) {
		t.Fatalf("initialize: %s", data)
	}
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// next reads one event: its name and data. It returns "" at the stream's end.
func (c *rawSSE) next() (event, data string) {
	for {
		line, err := c.events.ReadString('\n')
		if err != nil {
			return "", ""
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		case line == "" && event != "":
			return event, data
		}
	}
}

func (c *rawSSE) post(msg string) {
	c.t.Helper()
	resp, err := http.Post(c.endpoint, "application/json", strings.NewReader(msg))
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("POST %s: %d", msg, resp.StatusCode)
	}
}

// A shutdown lets calls in flight finish, over both transports. Over /sse
// the call's POST was answered 202 long before: what is waited for is the
// call's response on the session's event stream.
func TestShutdownLetsCallsFinish(t *testing.T) {
	for _, transport := range []string{"streamable", "sse"} {
		t.Run(transport, func(t *testing.T) {
			srv, entered, release := holdServer()
			ts := start(t, Options{Server: srv, ShutdownTimeout: time.Minute})
			var out <-chan string
			if transport == "sse" {
				c := openSSE(t, ts)
				c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hold","arguments":{}}}`)
				o := make(chan string, 1)
				go func() {
					_, data := c.next()
					o <- data
				}()
				out = o
			} else {
				out = callHold(connectOver(t, ts, transport))
			}
			<-entered
			stopped := make(chan error, 1)
			go func() { stopped <- ts.stop() }()
			testwait.Eventually(t, "the shutdown to begin", func() bool { return strings.Contains(ts.logs.String(), "shutting down") })
			select {
			case err := <-stopped:
				t.Fatalf("Serve returned (%v) with a call in flight", err)
			default:
			}
			close(release)
			if got := outcome(t, out); !strings.Contains(got, "released") {
				t.Errorf("the call in flight at shutdown: %q, want its result", got)
			}
			if err := <-stopped; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
}

// A session is not idle while one of its calls runs, however long and
// silent: the idle timer runs only between requests, over both transports;
// and once the call ends the session does idle out.
func TestSessionNotIdleWhileCallRuns(t *testing.T) {
	const timeout = 200 * time.Millisecond
	for _, transport := range []string{"streamable", "sse"} {
		t.Run(transport, func(t *testing.T) {
			srv, entered, release := holdServer()
			ts := start(t, Options{Server: srv, SessionTimeout: timeout})
			cs := connectOver(t, ts, transport)
			out := callHold(cs)
			<-entered
			// Nothing crosses the wire for five session timeouts. (What is
			// checked is that nothing happens, which takes the time.)
			time.Sleep(5 * timeout)
			close(release)
			if got := outcome(t, out); got != "released" {
				t.Fatalf("a call longer than the session timeout: %s, want its result", got)
			}
			testwait.Eventually(t, "the session to idle out after the call", func() bool {
				for range srv.Sessions() {
					return false
				}
				return true
			})
		})
	}
}

// A request that reuses the id of one in flight on an SSE session (go-sdk
// drops it without an answer) neither keeps the session busy for ever nor
// holds a shutdown for its whole bound, and it is logged.
func TestSSEReusedIDDoesNotPinTheSession(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hold","arguments":{}}}`
	reuse := func(t *testing.T, opts Options) (*testServer, *mcp.Server) {
		srv, entered, release := holdServer()
		opts.Server = srv
		ts := start(t, opts)
		c := openSSE(t, ts)
		c.post(call)
		<-entered
		c.post(call)
		testwait.Eventually(t, "the reuse to be logged", func() bool { return strings.Contains(ts.logs.String(), "reused the id of one in flight") })
		close(release)
		if _, data := c.next(); !strings.Contains(data, `"id":5`) || !strings.Contains(data, "released") {
			t.Fatalf("the call: %s", data)
		}
		return ts, srv
	}
	t.Run("idle", func(t *testing.T) {
		_, srv := reuse(t, Options{SessionTimeout: 200 * time.Millisecond})
		testwait.Eventually(t, "the session to idle out", func() bool {
			for range srv.Sessions() {
				return false
			}
			return true
		})
	})
	t.Run("shutdown", func(t *testing.T) {
		ts, _ := reuse(t, Options{ShutdownTimeout: time.Minute})
		stopped := make(chan error, 1)
		go func() { stopped <- ts.stop() }()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Fatal("the shutdown waited for a request go-sdk never answers")
		}
	})
}

// A shutdown does not wait for event streams, which never end by
// themselves: with a GET /mcp stream and an /sse stream open and no call in
// flight, Serve returns at once, well inside its bound, and both streams end.
func TestShutdownDoesNotWaitForStreams(t *testing.T) {
	ts := start(t, Options{ShutdownTimeout: time.Minute})
	cs := connect(t, ts.URL(), "")
	req, _ := http.NewRequest(http.MethodGet, ts.URL(), nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /mcp: %d", resp.StatusCode)
	}
	sse := openSSE(t, ts)
	stopped := make(chan error, 1)
	go func() { stopped <- ts.stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the shutdown waited for event streams")
	}
	io.Copy(io.Discard, resp.Body) // returns once the stream has ended
	if ev, _ := sse.next(); ev != "" {
		t.Errorf("the /sse stream went on after the shutdown: event %q", ev)
	}
}

// Events sent on an SSE session's stream, outside any request, keep the
// session from idling out, as requests do; with the bulk table too, whose
// lowering stands between go-sdk and the face's writer.
func TestSSEEventsKeepTheSessionFromIdling(t *testing.T) {
	t.Parallel() // it takes its time waiting; parallel tests never overlap the ones that measure
	// The timeout is fifteen times the pace of the events: only a stall of
	// the machine longer than 1.4 s could end the session.
	const timeout = 1500 * time.Millisecond
	for name, table := range map[string]*bulk.Table{"plain": nil, "bulk": bulk.New(1 << 10)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ts := start(t, Options{SessionTimeout: timeout, Bulk: table})
			c := openSSE(t, ts)
			var ss *mcp.ServerSession
			testwait.Eventually(t, "the session", func() bool {
				for s := range ts.opts.Server.Sessions() {
					ss = s
				}
				return ss != nil
			})
			// An event every 100 ms, for two timeouts; each is read as it
			// comes. (What is checked is that the session does not end, which
			// takes the time.)
			for i := range 30 {
				if err := ss.NotifyProgress(t.Context(), &mcp.ProgressNotificationParams{ProgressToken: "keep", Progress: float64(i)}); err != nil {
					t.Fatalf("event %d (after %v): %v: the session idled out while events flowed", i, time.Duration(i)*100*time.Millisecond, err)
				}
				if ev, data := c.next(); ev != "message" || !strings.Contains(data, `"progress":`+strconv.Itoa(i)) {
					t.Fatalf("event %d: %q %q", i, ev, data)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}
