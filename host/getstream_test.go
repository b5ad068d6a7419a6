package host_test

//lint:file-ignore SA1019 the tests drive the logging and roots that colibri relays on purpose.

// The standalone GET stream of a Streamable HTTP upstream: what a server
// sends outside any POST (list_changed, logs, its own requests) reaches
// colibri, and the stream is bounded like every other answer.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// getProxy is the proxy of remote_test.go with the GETs in the test's
// hands: each is counted, then given to get when it is set (else to the
// go-sdk server), and said gone once it ended.
type getProxy struct {
	*proxy
	url string
	get func(w http.ResponseWriter, r *http.Request)

	mu   sync.Mutex
	gets []time.Time // when each GET arrived
	seen chan struct{}
	gone chan struct{}
}

func newGetProxy(t *testing.T, get func(w http.ResponseWriter, r *http.Request)) *getProxy {
	p := &getProxy{proxy: &proxy{}, get: get, seen: make(chan struct{}, 100), gone: make(chan struct{}, 100)}
	p.restart()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			p.proxy.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		p.gets = append(p.gets, time.Now())
		p.mu.Unlock()
		p.seen <- struct{}{}
		defer func() { p.gone <- struct{}{} }()
		if p.get != nil {
			p.get(w, r)
			return
		}
		p.proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	p.url = srv.URL
	return p
}

func (p *getProxy) arrivals() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.gets)
}

// await waits for one signal on ch, failing the test after 10 s.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10 s", what)
	}
}

func warmRemote(url string) *registry.Server {
	srv := remoteSrv(url)
	srv.Lifecycle = registry.Persistent
	return srv
}

// A warm remote server's notifications/tools/list_changed, sent when its
// tools change between requests (so on no POST's stream), makes colibri's
// list stale, and the next list has the new tool.
func TestRemoteGETStreamListChanged(t *testing.T) {
	t.Parallel()
	s := newMCPServer()
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := httptest.NewServer(handler)
	t.Cleanup(hs.Close)
	h := newHarness(t, host.Options{})
	heard := make(chan []*mcp.Tool, 16)
	h.WatchLists(func(_ *registry.Server, tools []*mcp.Tool) { heard <- tools })
	next := func(what string) []*mcp.Tool {
		t.Helper()
		select {
		case tools := <-heard:
			return tools
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: nothing heard within 10 s", what)
			return nil
		}
	}
	srv := warmRemote(hs.URL)
	if tools, err := h.ListTools(t.Context(), srv, nil); err != nil || len(tools) != 3 {
		t.Fatalf("list: %v, %d tools", err, len(tools))
	}
	if tools := next("the first list"); len(tools) != 3 {
		t.Fatalf("the first list: %d tools", len(tools))
	}
	mcp.AddTool(s, &mcp.Tool{Name: "grown"}, func(context.Context, *mcp.CallToolRequest, echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	if tools := next("the server's list_changed, sent on its GET stream"); tools != nil {
		t.Fatalf("after list_changed: a list of %d tools, want the list made stale (nil)", len(tools))
	}
	tools, err := h.ListTools(t.Context(), srv, nil)
	if err != nil || findTool(tools, "grown") == nil {
		t.Fatalf("the list after list_changed: %v, %d tools, want grown among them", err, len(tools))
	}
}

// A log message the server sends outside the call's own stream (on the GET
// stream) while the call runs reaches that call's caller, relayed as
// colibri relays the ones on the call's stream.
func TestRemoteGETStreamLogReachesTheCall(t *testing.T) {
	t.Parallel()
	heard := make(chan struct{})
	var once sync.Once
	s := newMCPServer()
	var got <-chan struct{}
	mcp.AddTool(s, &mcp.Tool{Name: "aside"}, func(ctx context.Context, req *mcp.CallToolRequest, _ echoIn) (*mcp.CallToolResult, any, error) {
		err := onStandalone(ctx, got, func(aside context.Context) error {
			return req.Session.Log(aside, &mcp.LoggingMessageParams{Level: "warning", Data: "aside"})
		})
		if err != nil {
			return nil, nil, err
		}
		select {
		case <-heard:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "heard"}}}, nil, nil
		case <-ctx.Done(): // the call's timeout
			return nil, nil, ctx.Err()
		}
	})
	url, got := serveNoticingGET(t, s)
	h := newHarness(t, host.Options{Timeout: 2 * time.Minute})
	var logger string
	caller := &session.Caller{LogLevel: "info", Log: func(_ context.Context, p *mcp.LoggingMessageParams) {
		if p.Data == "aside" {
			logger = p.Logger
			once.Do(func() { close(heard) })
		}
	}}
	res, err := h.CallTool(t.Context(), remoteSrv(url), "aside", session.ArgumentsOf(map[string]any{"message": "x"}), caller, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "heard" || logger != "server/remote" {
		t.Fatalf("the call's caller %s the log sent on the GET stream (logger %q)", got, logger)
	}
}

// The specification lets a server refuse the GET with 405: colibri asks
// once per session and goes on without the stream.
func TestRemoteGETStream405(t *testing.T) {
	t.Parallel()
	p := newGetProxy(t, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no stream here", http.StatusMethodNotAllowed)
	})
	h := newHarness(t, host.Options{})
	srv := warmRemote(p.url)
	if tools, err := h.ListTools(t.Context(), srv, nil); err != nil || len(tools) != 3 {
		t.Fatalf("list: %v, %d tools", err, len(tools))
	}
	res, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "hi"}), nil, nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "echo: hi" {
		t.Fatalf("call: %v", err)
	}
	if n, inits := len(p.arrivals()), p.count("initialize"); n != 1 || inits != 1 {
		t.Errorf("%d GETs and %d initialize, want the GET asked once, in the one session", n, inits)
	}
}

// A server that never answers the GET holds no request: colibri waits a
// third of the timeout, then goes on as after a 405, and drops the GET.
func TestRemoteGETStreamUnanswered(t *testing.T) {
	t.Parallel()
	// Without colibri's bound the call would wait as long as the GET
	// (go-sdk waits for its answer inside Connect, under a context of its
	// own): the GET gives up after 30 s, so that the test fails rather
	// than hangs.
	giveUp := make(chan struct{})
	timer := time.AfterFunc(30*time.Second, func() { close(giveUp) })
	t.Cleanup(func() { timer.Stop() })
	dropped := make(chan struct{}, 1)
	p := newGetProxy(t, func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			dropped <- struct{}{}
		case <-giveUp:
		}
	})
	h := newHarness(t, host.Options{Timeout: 3 * time.Second})
	srv := warmRemote(p.url)
	res, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "hi"}), nil, nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "echo: hi" {
		t.Fatalf("call: %v", err)
	}
	select {
	case <-dropped:
	default:
		t.Fatal("the call was answered before colibri dropped the unanswered GET")
	}
	if _, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "again"}), nil, nil); err != nil {
		t.Fatalf("a second call on the warm session: %v", err)
	}
	if n := p.count("initialize"); n != 1 {
		t.Errorf("initialize sent %d times, want 1: the session outlives the unanswered GET", n)
	}
}

// A message past COLIBRI_MCP_MAX_RESULT_BYTES on the GET stream ends the
// warm session (no request of the caller's fails too_large for it): the
// next call starts a new one.
func TestRemoteGETStreamTooLarge(t *testing.T) {
	t.Parallel()
	flood := make(chan struct{})
	first := true
	var mu sync.Mutex
	p := newGetProxy(t, nil)
	p.get = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		big := first
		first = false
		mu.Unlock()
		if !big {
			p.proxy.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, ": ok\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-flood:
		case <-r.Context().Done():
			return
		}
		// A notification of 128 KiB, then nothing: the stream never ends.
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":%q}}\n\n", strings.Repeat("x", 128<<10))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	h := newHarness(t, host.Options{MaxResultBytes: 64 << 10})
	srv := warmRemote(p.url)
	if _, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "1"}), nil, nil); err != nil {
		t.Fatal(err)
	}
	close(flood)
	await(t, p.gone, "the GET stream cut at the bound")
	res, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "2"}), nil, nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "echo: 2" {
		t.Fatalf("the call after the flood: %v", err)
	}
	if n := p.count("initialize"); n != 2 {
		t.Errorf("initialize sent %d times, want 2: the flooded session must end", n)
	}
}

// A server that ends its GET stream at once, asking to be called back in a
// millisecond, is called back no sooner than once a second: four GETs
// take at least three seconds. (Measured where the server sees them, as
// a bound that latency cannot break: a GET arrives after it began, and
// colibri's GETs begin a second apart at the least, so the fourth arrives
// three seconds or more after the test began. Comparing arrivals one by
// one failed under load, when one GET took longer to arrive than the
// next; internal/remote's TestStandalonePaced checks each gap exactly.)
func TestRemoteGETStreamReconnectsPaced(t *testing.T) {
	t.Parallel()
	n := 0
	var mu sync.Mutex
	p := newGetProxy(t, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		n++
		id := n
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		// A new id each time: go-sdk counts it progress, and retries
		// without end.
		fmt.Fprintf(w, "id: %d\nretry: 1\ndata: \n\n", id)
	})
	h := newHarness(t, host.Options{})
	srv := warmRemote(p.url)
	began := time.Now()
	if _, err := h.ListTools(t.Context(), srv, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		await(t, p.seen, fmt.Sprintf("GET %d", i+1))
	}
	if d := p.arrivals()[3].Sub(began); d < 3*time.Second {
		t.Errorf("the fourth GET came %s after the test began, want at least 3s (a second between GETs)", d)
	}
}

// The GET stream ends with its session: a per-request one's with the
// request, a warm one's with colibri. Nothing is left listening.
func TestRemoteGETStreamEndsWithTheSession(t *testing.T) {
	t.Parallel()
	p := newGetProxy(t, nil)
	h := newHarness(t, host.Options{})
	srv := remoteSrv(p.url)
	srv.Lifecycle = registry.PerRequest
	if _, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "x"}), nil, nil); err != nil {
		t.Fatal(err)
	}
	await(t, p.seen, "the per-request session's GET stream opened")
	await(t, p.gone, "the per-request session's GET stream closed after the request")

	if _, err := h.ListTools(t.Context(), warmRemote(p.url), nil); err != nil {
		t.Fatal(err)
	}
	await(t, p.seen, "the warm session's GET stream opened")
	h.Close()
	await(t, p.gone, "the warm session's GET stream closed with colibri")
}

// A server that floods its GET stream with log messages, without end,
// holds no request: calls are answered while it floods, and the flood ends
// with colibri.
func TestRemoteGETStreamFlood(t *testing.T) {
	t.Parallel()
	flood, flowing := make(chan struct{}), make(chan struct{})
	p := newGetProxy(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, ": ok\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-flood:
		case <-r.Context().Done():
			return
		}
		event := []byte(strings.Repeat(`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"flood"}}`+"\n\n", 64))
		for sent := 0; r.Context().Err() == nil; sent += len(event) {
			if _, err := w.Write(event); err != nil {
				return
			}
			if sent < 4<<20 && sent+len(event) >= 4<<20 {
				close(flowing) // 4 MiB on their way: more than the socket holds
			}
		}
	})
	h := newHarness(t, host.Options{})
	srv := warmRemote(p.url)
	if _, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "before"}), nil, nil); err != nil {
		t.Fatal(err)
	}
	close(flood)
	select {
	case <-flowing:
	case <-time.After(10 * time.Second):
		t.Fatal("colibri did not read 4 MiB of the flood within 10 s")
	}
	// A caller that takes logs: each call is the one operation they go to.
	caller := &session.Caller{LogLevel: "debug", Log: func(context.Context, *mcp.LoggingMessageParams) {}}
	for i := range 3 {
		res, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": fmt.Sprint(i)}), caller, nil)
		if err != nil || res.Content[0].(*mcp.TextContent).Text != fmt.Sprintf("echo: %d", i) {
			t.Fatalf("call %d during the flood: %v", i, err)
		}
	}
	if n := p.count("initialize"); n != 1 {
		t.Errorf("initialize sent %d times, want 1", n)
	}
	h.Close()
	await(t, p.gone, "the flood ended with colibri")
}

// A request the server sends outside the call's own stream (roots/list on
// the GET stream) while the call runs reaches that call's caller, and the
// answer goes back to the server: the tool waits for it and says what it
// got. (server-everything asks for roots this way too, but once, 350 ms
// after initialize, and drops the request when colibri's GET is not yet
// open: on a loaded machine it often is not, so only a server that asks
// during the call can show it on demand.)
func TestRemoteGETStreamRequestReachesTheCall(t *testing.T) {
	t.Parallel()
	s := newMCPServer()
	var url string
	var got <-chan struct{}
	mcp.AddTool(s, &mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ echoIn) (*mcp.CallToolResult, any, error) {
		var res *mcp.ListRootsResult
		err := onStandalone(ctx, got, func(aside context.Context) (err error) {
			res, err = req.Session.ListRoots(aside, nil)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d roots", len(res.Roots))}}}, nil, nil
	})
	url, got = serveNoticingGET(t, s)
	h := newHarness(t, host.Options{Timeout: 2 * time.Minute})
	asked := 0
	caller := &session.Caller{ListRoots: func(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
		asked++
		return &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///tmp/a"}, {URI: "file:///tmp/b"}}}, nil
	}}
	res, err := h.CallTool(t.Context(), remoteSrv(url), "roots", session.ArgumentsOf(map[string]any{"message": "x"}), caller, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "2 roots" || asked != 1 {
		t.Fatalf("the call answered %q, its caller asked %d times: want the caller's 2 roots, asked once", got, asked)
	}
}

// serveNoticingGET serves s over Streamable HTTP; got is closed once
// colibri's GET (its standalone stream) has reached the server.
func serveNoticingGET(t *testing.T, s *mcp.Server) (url string, got <-chan struct{}) {
	arrived := make(chan struct{})
	var once sync.Once
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			once.Do(func() { close(arrived) })
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL, arrived
}

// onStandalone runs send, in a tool's handler, with a context of no
// request's (so go-sdk's server sends on the standalone stream) that ends
// with the call's ctx. The GET may come after the call (colibri opens it
// beside the session's first requests), and go-sdk refuses to send on a
// stream not yet connected: send runs once the GET has arrived (got), and
// again while the stream is being connected.
func onStandalone(ctx context.Context, got <-chan struct{}, send func(context.Context) error) error {
	aside, cancel := context.WithCancel(context.Background())
	defer context.AfterFunc(ctx, cancel)()
	defer cancel()
	select {
	case <-got:
	case <-ctx.Done():
		return ctx.Err()
	}
	for {
		err := send(aside)
		if err == nil || !strings.Contains(err.Error(), "stream not connected") || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}
