package host_test

// Remote upstreams ("url" entries) against a real go-sdk MCP server on
// loopback, behind a small recording proxy that can fail requests the ways
// real servers and networks do.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

type echoIn struct {
	Message string `json:"message"`
}

type bigIn struct {
	Bytes int `json:"bytes"`
}

// newMCPServer is the remote server: echo (a plain tool), look (readOnly),
// big (a result of the size asked).
func newMCPServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return text("echo: " + in.Message), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "look", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("look: " + in.Message), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
		return text(strings.Repeat("x", in.Bytes)), nil, nil
	})
	return s
}

// fault is what the proxy does to one request instead of passing it on.
type fault struct {
	status     int    // answer this status
	retryAfter string // with this Retry-After
	reset      bool   // read the request, then drop the connection
	hang       bool   // never answer
	echoURL    bool   // answer 400 with a JSON-RPC error quoting the request's url
	raw        string // write this response, byte for byte, and close
}

// proxy records every request (method, headers) and passes it to the
// current MCP handler, unless its fault func says otherwise.
type proxy struct {
	srv *httptest.Server

	mu      sync.Mutex
	inner   http.Handler
	methods []string
	headers []http.Header
	fault   func(method string, nth int) *fault
}

func newProxy(t *testing.T) *proxy {
	p := &proxy{}
	p.restart()
	p.srv = httptest.NewServer(p)
	// A warm session's GET stream stays open until colibri closes it,
	// which a test may do after this cleanup.
	t.Cleanup(func() {
		p.srv.CloseClientConnections()
		p.srv.Close()
	})
	return p
}

// restart replaces the MCP server: the sessions it knew are gone, as when
// a real server restarts.
func (p *proxy) restart() {
	s := newMCPServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	p.mu.Lock()
	p.inner = h
	p.mu.Unlock()
}

func (p *proxy) count(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, m := range p.methods {
		if m == method {
			n++
		}
	}
	return n
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	json.Unmarshal(body, &msg)
	p.mu.Lock()
	method := msg.Method
	if r.Method != http.MethodPost {
		method = r.Method
	}
	p.methods = append(p.methods, method)
	p.headers = append(p.headers, r.Header.Clone())
	nth := 0
	for _, m := range p.methods {
		if m == method {
			nth++
		}
	}
	var f *fault
	if p.fault != nil {
		f = p.fault(method, nth)
	}
	inner := p.inner
	p.mu.Unlock()
	switch {
	case f == nil:
		inner.ServeHTTP(w, r)
	case f.hang:
		<-r.Context().Done()
	case f.echoURL:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"bad request to %s"}}`, r.URL)
	case f.raw != "":
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			io.WriteString(conn, f.raw)
			conn.Close()
		}
	case f.reset:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				tc.SetLinger(0) // RST, not FIN
			}
			conn.Close()
		}
	default:
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		http.Error(w, http.StatusText(f.status), f.status)
	}
}

func remoteSrv(url string) *registry.Server {
	return &registry.Server{Name: "remote", URL: url}
}

func TestRemoteListAndCall(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	h := newHarness(t, host.Options{})
	for _, lifecycle := range []string{registry.Persistent, registry.PerRequest} {
		srv := remoteSrv(p.srv.URL)
		srv.Lifecycle = lifecycle
		tools, err := h.ListTools(t.Context(), srv, nil)
		if err != nil || len(tools) != 3 {
			t.Fatalf("%s: list: %v, %d tools", lifecycle, err, len(tools))
		}
		res, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "hi"}), nil, nil)
		if err != nil {
			t.Fatalf("%s: call: %v", lifecycle, err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != "echo: hi" {
			t.Errorf("%s: result %q", lifecycle, got)
		}
	}
	if n := p.count("initialize"); n != 3 {
		// persistent: one session for list and call; per_request: one each.
		t.Errorf("initialize sent %d times, want 3", n)
	}
}

func TestRemoteHeadersSentNeverShown(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	p.fault = func(method string, _ int) *fault {
		if method == "tools/call" {
			return &fault{status: http.StatusBadRequest}
		}
		return nil
	}
	var logs syncbuf.Buffer
	h := newHarness(t, host.Options{
		Logger:  slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Environ: func() []string { return []string{"API_KEY=key-s3cr3t-value", "TOKEN=tok-s3cr3t-value"} },
	})
	srv := remoteSrv(p.srv.URL)
	srv.Headers = map[string]string{"X-Api-Key": "${API_KEY}", "X-Toolsets": "repos"}
	srv.BearerToken = "${TOKEN}"
	_, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "hi"}), nil, nil)
	e := wantKind(t, err, failure.KindUnreachable, failure.PhaseCall)
	if e.HTTPStatus != http.StatusBadRequest || e.Attempts > 1 {
		t.Errorf("http_status %d, attempts %d; want 400, not retried", e.HTTPStatus, e.Attempts)
	}
	p.mu.Lock()
	for i, hd := range p.headers {
		if hd.Get("X-Api-Key") != "key-s3cr3t-value" || hd.Get("X-Toolsets") != "repos" || hd.Get("Authorization") != "Bearer tok-s3cr3t-value" {
			t.Errorf("request %d (%s) carried %v", i, p.methods[i], hd)
		}
	}
	p.mu.Unlock()
	h.Close()
	for _, shown := range []string{err.Error(), logs.String()} {
		if strings.Contains(shown, "s3cr3t") {
			t.Errorf("a secret is shown: %s", shown)
		}
	}
}

// A server that redirects to another host must not get colibri's bearer
// token or headers sent there (Go drops Authorization across hosts only
// for headers of the first request; colibri adds its own to every hop).
func TestRemoteRedirectKeepsCredentialsHome(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []http.Header
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		http.Error(w, "not here", http.StatusNotFound)
	}))
	defer other.Close()
	red := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp?code=tok-s3cr3t", http.StatusTemporaryRedirect)
	}))
	defer red.Close()
	h := newHarness(t, host.Options{Environ: func() []string { return []string{"TOKEN=tok-s3cr3t"} }})
	srv := remoteSrv(red.URL + "/mcp")
	srv.Headers = map[string]string{"X-Api-Key": "${TOKEN}"}
	srv.BearerToken = "${TOKEN}"
	_, err := h.ListTools(t.Context(), srv, nil)
	e := wantKind(t, err, failure.KindHandshake, failure.PhaseInitialize)
	if e.HTTPStatus != http.StatusTemporaryRedirect || e.Attempts > 1 {
		t.Errorf("http_status %d, attempts %d; want 307, not retried", e.HTTPStatus, e.Attempts)
	}
	if want := "redirected to " + strings.TrimPrefix(other.URL, "http://"); !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("err = %v; want it to say %q and no secret", err, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Errorf("the other host got %d requests (first: %v); want none", len(seen), seen[0])
	}
}

// A token in the url's query string is a secret like any other: the logs
// (at debug too) show the url with its query values redacted, and a server
// that echoes it back in an error does not get it shown.
func TestRemoteQueryTokenNeverShown(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	p.fault = func(method string, _ int) *fault {
		if method == "tools/call" {
			return &fault{echoURL: true}
		}
		return nil
	}
	var logs syncbuf.Buffer
	h := newHarness(t, host.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	srv := remoteSrv(p.srv.URL + "/mcp?key=q-s3cr3t-value")
	_, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "hi"}), nil, nil)
	wantKind(t, err, failure.KindUnreachable, failure.PhaseCall)
	h.Close()
	if !strings.Contains(err.Error(), "key=[redacted]") || !strings.Contains(logs.String(), `url="`+p.srv.URL+`/mcp?key=[redacted]"`) {
		t.Errorf("err %v\nlogs %s\nwant the url shown with key=[redacted]", err, logs.String())
	}
	for _, shown := range []string{err.Error(), logs.String()} {
		if strings.Contains(shown, "s3cr3t") {
			t.Errorf("the query token is shown: %s", shown)
		}
	}
}

func TestRemoteMissingVariableIsConfig(t *testing.T) {
	t.Parallel()
	h := newHarness(t, host.Options{Environ: func() []string { return nil }})
	srv := remoteSrv("http://127.0.0.1:1/mcp")
	srv.BearerToken = "${NOT_SET}"
	_, err := h.ListTools(t.Context(), srv, nil)
	e := wantKind(t, err, failure.KindConfig, failure.PhaseSpawn)
	if !strings.Contains(e.Error(), "bearer_token: ${NOT_SET} refers to a variable that is not set") || !strings.Contains(e.Hint, "--env-file F") {
		t.Errorf("err = %v", e)
	}
}

// A variable whose value holds a CR or LF cannot go into a header: a
// config error naming the key, not a refusal that looks like the server's
// (Go refuses such a request before sending it), and never the value.
func TestRemoteControlCharacterInExpandedValue(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	h := newHarness(t, host.Options{Environ: func() []string { return []string{"TOKEN=tok-s3cr3t\r\nX-Evil: 1"} }})
	for _, tc := range []struct {
		srv  func(*registry.Server)
		want string
	}{
		{func(s *registry.Server) { s.Headers = map[string]string{"X-Api-Key": "${TOKEN}"} },
			"headers X-Api-Key: after ${NAME} expansion the value holds the control character U+000D at byte 10, which an HTTP header cannot carry"},
		{func(s *registry.Server) { s.BearerToken = "${TOKEN}" },
			"bearer_token: after ${NAME} expansion the value holds the control character U+000D at byte 10, which an HTTP header cannot carry"},
	} {
		srv := remoteSrv(p.srv.URL)
		tc.srv(srv)
		_, err := h.ListTools(t.Context(), srv, nil)
		e := wantKind(t, err, failure.KindConfig, failure.PhaseSpawn)
		if !strings.Contains(e.Error(), tc.want) || strings.Contains(e.Error(), "s3cr3t") {
			t.Errorf("err = %v; want %q", e, tc.want)
		}
		// The variable is set: a hint about setting it would mislead.
		if !strings.Contains(e.Hint, "remove the line break") || strings.Contains(e.Hint, "set the variable") {
			t.Errorf("hint %q; want one about the line break in the value", e.Hint)
		}
	}
	if n := p.count("initialize"); n != 0 {
		t.Errorf("initialize sent %d times; want none", n)
	}
}

func TestRemote503IsRetried(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	p.fault = func(method string, nth int) *fault {
		if method == "tools/call" && nth == 1 {
			return &fault{status: http.StatusServiceUnavailable}
		}
		return nil
	}
	h := newHarness(t, host.Options{})
	res, err := h.CallTool(t.Context(), remoteSrv(p.srv.URL), "echo", session.ArgumentsOf(map[string]any{"message": "again"}), nil, nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "echo: again" {
		t.Fatalf("call: %v %v", res, err)
	}
	if n := p.count("tools/call"); n != 2 {
		t.Errorf("tools/call sent %d times, want 2", n)
	}

	// Always 503: unreachable after the retries, with the status.
	p2 := newProxy(t)
	p2.fault = func(method string, _ int) *fault {
		if method == "tools/call" {
			return &fault{status: http.StatusServiceUnavailable}
		}
		return nil
	}
	_, err = h.CallTool(t.Context(), remoteSrv(p2.srv.URL), "echo", session.ArgumentsOf(map[string]any{"message": "again"}), nil, nil)
	e := wantKind(t, err, failure.KindUnreachable, failure.PhaseCall)
	if e.HTTPStatus != 503 || e.Attempts != 3 || p2.count("tools/call") != 3 {
		t.Errorf("http_status %d, attempts %d, sent %d; want 503, 3, 3", e.HTTPStatus, e.Attempts, p2.count("tools/call"))
	}
}

func TestRemote429HonoursRetryAfter(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	p.fault = func(method string, nth int) *fault {
		if method == "tools/list" && nth == 1 {
			return &fault{status: http.StatusTooManyRequests, retryAfter: "1"}
		}
		return nil
	}
	h := newHarness(t, host.Options{})
	start := time.Now()
	tools, err := h.ListTools(t.Context(), remoteSrv(p.srv.URL), nil)
	if err != nil || len(tools) != 3 {
		t.Fatalf("list: %v", err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("retried after %s: Retry-After: 1 was not honoured", took)
	}
	if n := p.count("tools/list"); n != 2 {
		t.Errorf("tools/list sent %d times, want 2", n)
	}
}

func TestRemote401IsUnauthorizedNotRetried(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	p.fault = func(string, int) *fault { return &fault{status: http.StatusUnauthorized} }
	h := newHarness(t, host.Options{})
	_, err := h.ListTools(t.Context(), remoteSrv(p.srv.URL), nil)
	e := wantKind(t, err, failure.KindUnauthorized, failure.PhaseInitialize)
	if e.HTTPStatus != 401 || p.count("initialize") != 1 {
		t.Errorf("http_status %d, initialize sent %d times; want 401, once", e.HTTPStatus, p.count("initialize"))
	}
}

// A 403 whose WWW-Authenticate holds control characters (an escape
// sequence, a bell, a NUL) is unauthorized all the same, with the
// server's words, control characters escaped, in the error and in the
// log: Go's HTTP client refuses such a header (before the status is
// known: http_status stays unset), and the failure read as "handshake …
// rejected by transport", with its cause in no log.
func TestRemoteForbiddenWithControlCharacters(t *testing.T) {
	t.Parallel()
	const challenge = "Bearer error=\"insufficient_scope\", error_description=\"\x1b[2Jneeds \x07admin\x00\""
	p := newProxy(t)
	p.fault = func(string, int) *fault {
		return &fault{raw: "HTTP/1.1 403 Forbidden\r\nWWW-Authenticate: " + challenge + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"}
	}
	logs := &syncbuf.Buffer{}
	h := newHarness(t, host.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	_, err := h.ListTools(t.Context(), remoteSrv(p.srv.URL), nil)
	e := wantKind(t, err, failure.KindUnauthorized, failure.PhaseInitialize)
	if msg := e.Error(); !strings.Contains(msg, "insufficient_scope") || !strings.Contains(msg, "needs") || strings.ContainsAny(msg, "\x1b\x07\x00") {
		t.Errorf("the error should hold the server's challenge, control characters escaped: %q", msg)
	}
	if got := logs.String(); !strings.Contains(got, "insufficient_scope") || strings.ContainsAny(got, "\x1b\x07\x00") {
		t.Errorf("the log should hold the challenge, escaped:\n%s", got)
	}
}

// A url that answers initialize with something other than MCP (a web page,
// a bare 202, another content type) is the wrong url, not a broken
// connection: handshake, saying what it answered, and not retried.
func TestRemoteNotMCPAnswerIsHandshake(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, ctype, body string
		status            int
		want              string
	}{
		{"html", "text/html; charset=utf-8", "<html><body>Welcome</body></html>", http.StatusOK, "answered with Content-Type text/html, not MCP"},
		{"octet", "application/octet-stream", "\x00\x01", http.StatusOK, "answered with Content-Type application/octet-stream, not MCP"},
		{"bare202", "", "", http.StatusAccepted, "answered initialize with 202 Accepted and no message, not MCP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			posts := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					mu.Lock()
					posts++
					mu.Unlock()
				}
				if tc.ctype != "" {
					w.Header().Set("Content-Type", tc.ctype)
				}
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			h := newHarness(t, host.Options{})
			_, err := h.ListTools(t.Context(), remoteSrv(srv.URL+"/mcp"), nil)
			e := wantKind(t, err, failure.KindHandshake, failure.PhaseInitialize)
			if want := "the server at " + srv.URL + "/mcp " + tc.want; !strings.Contains(e.Error(), want) {
				t.Errorf("err = %v; want it to say %q", e, want)
			}
			mu.Lock()
			defer mu.Unlock()
			if e.Attempts > 1 || posts != 1 {
				t.Errorf("attempts %d, %d POSTs; want one, not retried", e.Attempts, posts)
			}
		})
	}
}

func TestRemoteResetAfterWrite(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	p.fault = func(method string, nth int) *fault {
		if method == "tools/call" && nth == 1 {
			return &fault{reset: true}
		}
		return nil
	}
	h := newHarness(t, host.Options{})
	srv := remoteSrv(p.srv.URL)
	// A plain tool may have run: not called again.
	_, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "once"}), nil, nil)
	e := wantKind(t, err, failure.KindUnreachable, failure.PhaseCall)
	if e.Attempts > 1 || p.count("tools/call") != 1 {
		t.Errorf("attempts %d, sent %d: a plain tool was called again after a reset", e.Attempts, p.count("tools/call"))
	}
	// A readOnly tool is called again.
	p2 := newProxy(t)
	p2.fault = p.fault
	res, err := h.CallTool(t.Context(), remoteSrv(p2.srv.URL), "look", session.ArgumentsOf(map[string]any{"message": "twice"}), nil, nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "look: twice" || p2.count("tools/call") != 2 {
		t.Errorf("readOnly call after a reset: %v, sent %d", err, p2.count("tools/call"))
	}
}

func TestRemoteHangTimesOut(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	p.fault = func(method string, _ int) *fault {
		if method == "tools/call" {
			return &fault{hang: true}
		}
		return nil
	}
	// A phase timeout far beyond the bound below: only call_timeout_ms can
	// end the call within it.
	h := newHarness(t, host.Options{Timeout: time.Minute})
	srv := remoteSrv(p.srv.URL)
	srv.CallTimeout = 300
	// Connected first, so that only the call is timed: a slow start under
	// load (the race detector, parallel tests) is not the call's.
	if _, err := h.ListTools(t.Context(), srv, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "x"}), nil, nil)
	wantKind(t, err, failure.KindTimeout, failure.PhaseCall)
	// Without call_timeout_ms the call would run to the phase timeout (a
	// minute): 10 s tells that apart with room for a loaded machine.
	within(t, start, 10*time.Second)
}

func TestRemoteRestartedServerIsReinitialized(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	var retries atomic.Int32
	h := newHarness(t, host.Options{OnRetry: func(string, failure.Phase) { retries.Add(1) }})
	srv := remoteSrv(p.srv.URL)
	if _, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "1"}), nil, nil); err != nil {
		t.Fatal(err)
	}
	p.restart() // colibri's session id now gets 404
	res, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "2"}), nil, nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "echo: 2" {
		t.Fatalf("call after the restart: %v", err)
	}
	if n := p.count("initialize"); n != 2 {
		t.Errorf("initialize sent %d times, want 2 (re-initialized once)", n)
	}
	if n := retries.Load(); n != 1 {
		t.Errorf("%d retries, want 1: the 404 must end the session at once", n)
	}
}

func TestRemoteTooLarge(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	h := newHarness(t, host.Options{MaxResultBytes: 64 << 10})
	srv := remoteSrv(p.srv.URL)
	if _, err := h.CallTool(t.Context(), srv, "big", session.ArgumentsOf(map[string]any{"bytes": 32 << 10}), nil, nil); err != nil {
		t.Fatalf("a result under the limit: %v", err)
	}
	_, err := h.CallTool(t.Context(), srv, "big", session.ArgumentsOf(map[string]any{"bytes": 128 << 10}), nil, nil)
	wantKind(t, err, failure.KindTooLarge, failure.PhaseCall)
}

func TestRemoteConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var tries atomic.Int32
	h := newHarness(t, host.Options{OnRetry: func(string, failure.Phase) { tries.Add(1) }})
	_, err = h.ListTools(t.Context(), remoteSrv("http://"+addr+"/mcp"), nil)
	e := wantKind(t, err, failure.KindUnreachable, failure.PhaseInitialize)
	if e.Attempts != 3 || !strings.Contains(e.Error(), "connection refused") {
		t.Errorf("attempts %d, err %v", e.Attempts, e)
	}
}

// oauthHandler is a stand-in for the OAuth package's handler: a static
// token, or a login that is needed first.
type oauthHandler struct {
	token string // "" : no token yet
	login error  // what Authorize fails with
}

func (o *oauthHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	if o.token == "" {
		return nil, nil
	}
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: o.token, TokenType: "Bearer"}), nil
}

func (o *oauthHandler) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	return o.login
}

type loginErr struct{}

func (loginErr) Error() string {
	return `server "remote" needs a login: run colibri-mcp auth login remote`
}

func (loginErr) LoginRequired() bool { return true }

func TestRemoteOAuthHook(t *testing.T) {
	t.Parallel()
	oauthSrv := func(url string) *registry.Server {
		srv := remoteSrv(url)
		srv.OAuth = &registry.OAuth{Grant: registry.GrantAuthorizationCode}
		return srv
	}
	// No hook: OAuth is not available.
	h := newHarness(t, host.Options{})
	_, err := h.ListTools(t.Context(), oauthSrv("http://127.0.0.1:1/mcp"), nil)
	if e := wantKind(t, err, failure.KindConfig, failure.PhaseSpawn); !strings.Contains(e.Error(), "OAuth is not available") {
		t.Errorf("err = %v", e)
	}

	// The hook's token reaches the server, over Streamable HTTP and SSE.
	p := newProxy(t)
	var sseAuth atomic.Value
	sse := newMCPServer()
	sseH := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return sse }, nil)
	sseSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseAuth.Store(r.Header.Get("Authorization"))
		sseH.ServeHTTP(w, r)
	}))
	t.Cleanup(sseSrv.Close)
	var hooked atomic.Int32
	h2 := newHarness(t, host.Options{OAuth: func(srv *registry.Server, hc *http.Client) (auth.OAuthHandler, error) {
		hooked.Add(1)
		if srv.Name != "remote" || hc == nil {
			t.Errorf("hook called with %q, %v", srv.Name, hc)
		}
		return &oauthHandler{token: "oauth-tok"}, nil
	}})
	if _, err := h2.ListTools(t.Context(), oauthSrv(p.srv.URL), nil); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	if got := p.headers[0].Get("Authorization"); got != "Bearer oauth-tok" {
		t.Errorf("streamable: Authorization %q", got)
	}
	p.mu.Unlock()
	sseEntry := oauthSrv(sseSrv.URL)
	sseEntry.Transport = registry.TransportSSE
	if _, err := h2.ListTools(t.Context(), sseEntry, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := sseAuth.Load().(string); got != "Bearer oauth-tok" || hooked.Load() != 2 {
		t.Errorf("sse: Authorization %q, hook called %d times", got, hooked.Load())
	}

	// A login is needed: unauthorized, in the OAuth package's words.
	refuse := newProxy(t)
	refuse.fault = func(string, int) *fault { return &fault{status: http.StatusUnauthorized} }
	h3 := newHarness(t, host.Options{OAuth: func(*registry.Server, *http.Client) (auth.OAuthHandler, error) {
		return &oauthHandler{login: loginErr{}}, nil
	}})
	_, err = h3.ListTools(t.Context(), oauthSrv(refuse.srv.URL), nil)
	e := wantKind(t, err, failure.KindUnauthorized, failure.PhaseInitialize)
	if !strings.Contains(e.Error(), "run colibri-mcp auth login remote") || e.Attempts > 1 {
		t.Errorf("err = %v (attempts %d)", e, e.Attempts)
	}
}

// The caller's cancellation ends the call at once and reaches the remote
// server as notifications/cancelled.
func TestRemoteCancellationIsForwarded(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	called, cancelled := make(chan struct{}), make(chan struct{})
	var once1, once2 sync.Once
	p.fault = func(method string, _ int) *fault {
		switch method {
		case "tools/call":
			once1.Do(func() { close(called) })
			return &fault{hang: true}
		case "notifications/cancelled":
			once2.Do(func() { close(cancelled) })
		}
		return nil
	}
	h := newHarness(t, host.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancelledAt := make(chan time.Time, 1)
	go func() {
		<-called
		cancelledAt <- time.Now()
		cancel()
	}()
	_, err := h.CallTool(ctx, remoteSrv(p.srv.URL), "echo", session.ArgumentsOf(map[string]any{"message": "x"}), nil, nil)
	wantKind(t, err, failure.KindCancelled, failure.PhaseCall)
	// Timed from the cancellation, not from a start that connecting under
	// load may make slow; a call that ignored it would run to its timeout.
	within(t, <-cancelledAt, 10*time.Second)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server was never sent notifications/cancelled")
	}
}

// A persistent remote server that keeps failing opens the circuit, as a
// process does: past the threshold, calls fail fast with unavailable and
// nothing more is sent to the server until the cool-down ends.
func TestRemoteCircuitOpens(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	p.fault = func(string, int) *fault { return &fault{status: http.StatusServiceUnavailable} }
	h := newHarness(t, host.Options{Retries: 1, CircuitThreshold: 3, Cooldown: time.Hour, CooldownMax: time.Hour})
	srv := remoteSrv(p.srv.URL)
	for range 3 {
		_, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "x"}), nil, nil)
		if e := wantKind(t, err, failure.KindUnreachable, failure.PhaseInitialize); e.HTTPStatus != http.StatusServiceUnavailable {
			t.Fatalf("http_status %d, want 503", e.HTTPStatus)
		}
	}
	sent := p.count("initialize")
	_, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "x"}), nil, nil)
	wantKind(t, err, failure.KindUnavailable, "")
	if n := p.count("initialize"); n != sent {
		t.Errorf("an open circuit sent %d more initialize requests, want none", n-sent)
	}
}

// keepalive_ms sets how often an idle warm remote session is pinged, and 0
// turns pings off: with colibri's default at an hour, keepalive_ms 20 pings;
// with the default at 20 ms, keepalive_ms 0 sends none while a server
// without the key is pinged.
func TestRemoteKeepalive(t *testing.T) {
	t.Parallel()
	every, never := int64(20), int64(0)
	waitPings := func(p *proxy, what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); p.count("ping") < 3; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d pings in 10 s", what, p.count("ping"))
			}
		}
	}
	warmUp := func(h *harness, name string, p *proxy, keepalive *int64) {
		t.Helper()
		srv := remoteSrv(p.srv.URL)
		srv.Name, srv.KeepaliveMS = name, keepalive
		if _, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": "x"}), nil, nil); err != nil {
			t.Fatal(err)
		}
	}

	set := newProxy(t)
	warmUp(newHarness(t, host.Options{PingInterval: time.Hour}), "set", set, &every)
	waitPings(set, "keepalive_ms 20, default an hour")

	quiet, usual := newProxy(t), newProxy(t)
	h := newHarness(t, host.Options{PingInterval: 20 * time.Millisecond})
	warmUp(h, "quiet", quiet, &never)
	warmUp(h, "usual", usual, nil)
	waitPings(usual, "no keepalive_ms, default 20 ms")
	if n := quiet.count("ping"); n != 0 {
		t.Errorf("keepalive_ms 0: %d pings", n)
	}
}
