package httpserve

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
)

// testServer is colibri's HTTP face in process, over a small MCP server.
type testServer struct {
	*Server
	base   string // http://127.0.0.1:PORT
	logs   *syncbuf.Buffer
	closed chan string // remote addresses of connections the server closed
	// stop ends Serve's context and returns what Serve returned; the test's
	// cleanup calls it too.
	stop func() error
}

// newMCPServer has two tools: whoami (the caller's principal, as the tools
// layer sees it) and big (a text of n bytes).
func newMCPServer(log *slog.Logger) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ServerOptions{Logger: log})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		userID := ""
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			userID = req.Extra.TokenInfo.UserID
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: reqctx.Principal(ctx) + "|" + userID}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct{ N int }) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("z", in.N)}}}, nil, nil
	})
	// flood sends N progress notifications of 1 MiB outside any request:
	// over Streamable HTTP they travel on the session's GET stream.
	mcp.AddTool(s, &mcp.Tool{Name: "flood"}, func(_ context.Context, req *mcp.CallToolRequest, in struct{ N int }) (*mcp.CallToolResult, any, error) {
		msg := strings.Repeat("f", 1<<20)
		for i := range in.N {
			if err := req.Session.NotifyProgress(context.Background(), &mcp.ProgressNotificationParams{ProgressToken: "flood", Progress: float64(i), Message: msg}); err != nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stopped: " + err.Error()}}}, nil, nil
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sent"}}}, nil, nil
	})
	return s
}

func start(t *testing.T, opts Options) *testServer {
	t.Helper()
	logs := &syncbuf.Buffer{}
	log := slog.New(QuietSessionIDs(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Server == nil {
		opts.Server = newMCPServer(log)
	}
	opts.Logger = log
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: srv, base: "http://" + srv.ln.Addr().String(), logs: logs, closed: make(chan string, 1000)}
	srv.hs.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			ts.closed <- c.RemoteAddr().String()
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	ts.stop = sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() {
		if err := ts.stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ts
}

func writeTokens(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func httpClient(token string) *http.Client {
	if token == "" {
		return &http.Client{}
	}
	return &http.Client{Transport: bearer{token, http.DefaultTransport}}
}

func connect(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := tryConnect(t, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient(token), DisableStandaloneSSE: true})
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	return cs
}

func tryConnect(t *testing.T, tr mcp.Transport) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	// Not a shorter context: the SSE client's event stream lives in it.
	cs, err := client.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func whoami(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// rawRequest sends one request with the given headers and body, and returns
// the status and body.
func rawRequest(t *testing.T, method, url, token string, header map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body == "" {
		req.Body = http.NoBody
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := httpClient(token).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func TestTokenFile(t *testing.T) {
	// A byte order mark, CRLF line ends, comments, blank lines, tabs; two
	// tokens of one principal (a rotation).
	good := writeTokens(t, "\ufeff# ops\r\nalice   alice-token-1\r\n\n  bare-token_2.x~+/==  \nci-bot\tci-token\nalice alice-token-2\n")
	var set tokenSet
	if err := set.load(good); err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]string{
		"alice-token-1": "alice", "alice-token-2": "alice", "bare-token_2.x~+/==": "token:" + sha12("bare-token_2.x~+/=="), "ci-bot": "",
		"ci-token": "ci-bot", "alice-token-": "", "": "", "# ops": "", "alice-token-1 ": "",
	} {
		if got := set.principal(token); got != want {
			t.Errorf("the principal of %q: %q, want %q", token, got, want)
		}
	}
	bom := writeTokens(t, "\ufeffbom-token\n")
	if err := set.load(bom); err != nil || set.principal("bom-token") != "token:"+sha12("bom-token") {
		t.Errorf("a file that starts with a byte order mark: %v", err)
	}

	bad := writeTokens(t, "ok-token\nname two words-token\nbob tok\"en\nbob ok2\ntoken:x tok3\nstdio tok4\nok-token\nbob ok3 # bob's\n")
	_, err := parseTokenFile(bad)
	if err == nil {
		t.Fatal("a file with bad lines loaded")
	}
	for _, w := range []string{bad + ":2: 3 words", bad + ":3: the token has characters", bad + ":5: name \"token:x\"", bad + ":6: name \"stdio\" is reserved", bad + ":7: the same token as line 1",
		bad + ":8: 4 words; a line is TOKEN or NAME TOKEN, and a comment is a line of its own"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "words-token") || strings.Contains(err.Error(), "ok-token") {
		t.Errorf("the error shows a token: %v", err)
	}
	if _, err := parseTokenFile(writeTokens(t, "# nothing\n")); err == nil || !strings.Contains(err.Error(), "holds no token") {
		t.Errorf("an empty file: %v", err)
	}
	// New refuses the file, naming it.
	if _, err := New(Options{Addr: "127.0.0.1:0", Server: newMCPServer(nil), TokenFile: bad}); err == nil || !strings.Contains(err.Error(), bad+":2") {
		t.Errorf("New with a bad token file: %v", err)
	}
	if _, err := New(Options{Addr: "0.0.0.0:0", Server: newMCPServer(nil)}); err == nil || !strings.Contains(err.Error(), "without a token file") {
		t.Errorf("a non-loopback address without tokens: %v", err)
	}
}

// Checking a token takes a time that tells nothing of the tokens' length: a
// guess of the right length costs what a guess one byte shorter costs.
// (Compared byte for byte, even in constant time, the first took the whole
// comparison and the second none: subtle.ConstantTimeCompare returns at
// once on a length mismatch.)
func TestTokenCheckTellsNoLength(t *testing.T) {
	secret := strings.Repeat("s", 60000)
	var set tokenSet
	if err := set.load(writeTokens(t, "alice "+secret+"\n")); err != nil {
		t.Fatal(err)
	}
	check := func(guess string) time.Duration {
		start := time.Now()
		for range 50 {
			if set.principal(guess) != "" {
				t.Fatal("a wrong guess passed")
			}
		}
		return time.Since(start)
	}
	// A/B alternated, the best of each: a burst of load on the machine
	// slows both guesses alike, not one of them. A comparison of the tokens
	// themselves costs ~60,000 byte compares on the first and none on the
	// second, a ratio in the hundreds; hashing both is even.
	same, shorter := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for range 30 {
		same = min(same, check(strings.Repeat("g", len(secret))))
		shorter = min(shorter, check(strings.Repeat("g", len(secret)-1)))
	}
	if same > 10*shorter || shorter > 10*same {
		t.Errorf("50 checks of a guess of the token's length: %v; one byte shorter: %v", same, shorter)
	}
}

// Requests without a valid token are refused with 401 and the realm, before
// any of the body is read, and logged at warn without the token.
func TestUnauthenticatedRefusedBeforeBody(t *testing.T) {
	ts := start(t, Options{TokenFile: writeTokens(t, "alice alice-secret-token\n")})
	for name, auth := range map[string]string{"no token": "", "unknown token": "Authorization: Bearer wrong-secret-value\r\n"} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ts.ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Headers announcing a body that never comes.
			fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n%s\r\n", ts.ln.Addr(), auth)
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer before the body: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", resp.StatusCode)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Bearer realm="colibri-mcp"`) {
				t.Errorf("WWW-Authenticate %q", got)
			}
			waitClosed(t, ts, conn.LocalAddr().String(), 5*time.Second)
		})
	}
	logs := ts.logs.String()
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "status=401") || !strings.Contains(logs, "remote=127.0.0.1:") ||
		!strings.Contains(logs, `reason="no bearer token"`) || !strings.Contains(logs, `reason="unknown bearer token"`) {
		t.Errorf("the refusals are not logged at warn with remote and reason:\n%s", logs)
	}
	if strings.Contains(logs, "wrong-secret-value") || strings.Contains(logs, "alice-secret-token") {
		t.Errorf("a token reached the log:\n%s", logs)
	}
	// And the right token works, with its name as the principal.
	cs := connect(t, ts.URL(), "alice-secret-token")
	if got := whoami(t, cs); got != "alice|alice" {
		t.Errorf("principal %q, want alice (context and TokenInfo)", got)
	}
}

// Headers are read before anything is known of the caller: past
// MaxHeaderBytes (64 KiB, where net/http's default is 1 MiB) they are refused
// with 431, and not read on.
func TestHeaderLimit(t *testing.T) {
	ts := start(t, Options{TokenFile: writeTokens(t, "alice alice-secret-token\n")})
	for _, c := range []struct {
		size int
		want int
	}{{32 << 10, http.StatusUnauthorized}, {100 << 10, http.StatusRequestHeaderFieldsTooLarge}} {
		conn, err := net.Dial("tcp", ts.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		go fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Pad: %s\r\nContent-Length: 0\r\n\r\n", ts.ln.Addr(), strings.Repeat("p", c.size))
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%d bytes of headers: %v", c.size, err)
		}
		if resp.StatusCode != c.want {
			t.Errorf("%d bytes of headers: %d, want %d", c.size, resp.StatusCode, c.want)
		}
		conn.Close()
	}
}

// Headers that trickle in, a line at a time and never ending, are cut off
// at ReadHeaderTimeout, whatever the caller keeps sending.
func TestHeadersDeadline(t *testing.T) {
	const bound = 300 * time.Millisecond
	ts := start(t, Options{ReadHeaderTimeout: bound})
	// The server may accept and start its clock before Dial returns here,
	// so the lower bound is measured from before the dial.
	begun := time.Now()
	conn, err := net.Dial("tcp", ts.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\n", ts.ln.Addr())
	go func() {
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(conn, "X-Trickle-%d: x\r\n", i); err != nil {
				return
			}
			time.Sleep(bound / 10) // the trickle itself, not a wait for an event
		}
	}()
	waitClosed(t, ts, conn.LocalAddr().String(), bound+5*time.Second)
	if d := time.Since(begun); d < bound {
		t.Errorf("cut off after %v, before the bound %v", d, bound)
	}
}

// A flood of refused requests writes a bounded number of warnings: the
// burst, then ten a second, with the count of the ones left out on the next
// warning written.
func TestRefusalWarningsBounded(t *testing.T) {
	var r refusals
	t0 := time.Now()
	for i := range refusalBurst {
		if ok, unlogged := r.allow(t0); !ok || unlogged != 0 {
			t.Fatalf("refusal %d of the burst: logged %v (%d left out before)", i, ok, unlogged)
		}
	}
	for range 3 {
		if ok, _ := r.allow(t0); ok {
			t.Fatal("a refusal past the burst was logged")
		}
	}
	if ok, unlogged := r.allow(t0.Add(time.Second / refusalRate)); !ok || unlogged != 3 {
		t.Errorf("a tenth of a second later: logged %v, %d left out before; want true, 3", ok, unlogged)
	}

	// Over the wire: 300 unauthenticated requests.
	ts := start(t, Options{TokenFile: writeTokens(t, "alice alice-secret-token\n")})
	begun := time.Now()
	var wg sync.WaitGroup
	for range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rawRequest(t, http.MethodPost, ts.URL(), "", nil, initialize)
		}()
	}
	wg.Wait()
	most := refusalBurst + int(time.Since(begun).Seconds()*refusalRate) + 1
	if n := strings.Count(ts.logs.String(), "HTTP request refused"); n < refusalBurst || n > most {
		t.Errorf("300 refusals wrote %d warnings, want %d to %d", n, refusalBurst, most)
	}
}

// waitClosed waits until the server has closed the connection from remote.
func waitClosed(t *testing.T, ts *testServer, remote string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case addr := <-ts.closed:
			if addr == remote {
				return
			}
		case <-deadline:
			t.Fatalf("the server did not close the connection from %s within %v", remote, d)
		}
	}
}

// A body that trickles in is cut off at BodyTimeout; a body that arrives in
// time is served, and a long response after it is not cut by that deadline.
func TestBodyDeadline(t *testing.T) {
	const bound = 400 * time.Millisecond
	ts := start(t, Options{BodyTimeout: bound})
	before := fdCount(t)
	conn, err := net.Dial("tcp", ts.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		ts.ln.Addr(), len(initialize), initialize[:10])
	waitClosed(t, ts, conn.LocalAddr().String(), bound+5*time.Second)
	if d := time.Since(start); d < bound {
		t.Errorf("cut off after %v, before the bound %v", d, bound)
	}
	conn.Close()
	waitFDs(t, before)

	// In time: served, and a response streamed later than the bound is whole.
	cs := connect(t, ts.URL(), "")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"N": 1000}})
	if err != nil || len(res.Content[0].(*mcp.TextContent).Text) != 1000 {
		t.Fatalf("a call after the deadline tests: %v", err)
	}
}

// A caller that stops reading a large response is cut off WriteTimeout after
// the write that blocked, and its descriptors are released.
func TestNonReadingClientCutOff(t *testing.T) {
	const bound = 500 * time.Millisecond
	ts := start(t, Options{WriteTimeout: bound})
	cs := connect(t, ts.URL(), "")
	before := fdCount(t)

	d := net.Dialer{}
	conn, err := d.Dial("tcp", ts.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"big","arguments":{"N":12582912}}}`
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s", ts.ln.Addr(), cs.ID(), len(body), body)
	// Never read: the server's write blocks once the socket buffers are full.
	// (The slack is for building and encoding 12 MiB under -race.)
	waitClosed(t, ts, conn.LocalAddr().String(), bound+30*time.Second)
	conn.Close()
	waitFDs(t, before)

	// The session itself still serves.
	if got := whoami(t, cs); got != AnonymousPrincipal+"|" {
		t.Errorf("after the cut-off: %q", got)
	}
}

// Event streams that are never read are cut off too, within WriteTimeout of
// the write that blocked: the /sse stream (whose session ends, and frees its
// slot) and the GET stream of a Streamable HTTP session (whose session goes
// on).
func TestNonReadingStreamsCutOff(t *testing.T) {
	const bound = 500 * time.Millisecond
	// dial opens a connection that reads little, sends a GET and reads the
	// start of the answer, up to and with the line holding want.
	dial := func(t *testing.T, ts *testServer, request, want string) (net.Conn, string) {
		conn, err := net.Dial("tcp", ts.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.(*net.TCPConn).SetReadBuffer(4096)
		fmt.Fprintf(conn, request, ts.ln.Addr())
		br := bufio.NewReader(conn)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the stream's start: %v", err)
			}
			if strings.Contains(line, want) {
				conn.SetReadDeadline(time.Time{})
				return conn, strings.TrimSpace(line)
			}
		}
	}
	t.Run("sse", func(t *testing.T) {
		ts := start(t, Options{WriteTimeout: bound})
		conn, line := dial(t, ts, "GET /sse HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", "data: ")
		endpoint := ts.base + strings.TrimPrefix(line, "data: ")
		for _, msg := range []string{initialize, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"N":12582912}}}`} {
			if code, _, body := rawRequest(t, http.MethodPost, endpoint, "", nil, msg); code != http.StatusAccepted {
				t.Fatalf("POST %s: %d %s", msg, code, body)
			}
		}
		// Never read: the answer's write blocks. (The slack is for building
		// and encoding 12 MiB under -race.)
		waitClosed(t, ts, conn.LocalAddr().String(), bound+30*time.Second)
		testwait.Eventually(t, "the SSE session to end", func() bool {
			ts.sessions.mu.Lock()
			defer ts.sessions.mu.Unlock()
			return len(ts.sessions.sse) == 0
		})
	})
	t.Run("mcp GET", func(t *testing.T) {
		ts := start(t, Options{WriteTimeout: bound})
		cs := connect(t, ts.URL(), "")
		conn, _ := dial(t, ts, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: "+cs.ID()+
			"\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n", ": ok")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "flood", Arguments: map[string]any{"N": 40}})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(got, "stopped: ") {
			t.Errorf("40 MiB of notifications to a stream never read: %q, want them stopped", got)
		}
		waitClosed(t, ts, conn.LocalAddr().String(), bound+30*time.Second)
		if got := whoami(t, cs); got != AnonymousPrincipal+"|" {
			t.Errorf("the session after its stream was cut: %q", got)
		}
	})
}

func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// waitFDs waits until the process holds no more descriptors than before.
func waitFDs(t *testing.T, before int) {
	t.Helper()
	if before < 0 {
		t.Log("no /proc/self/fd: descriptors not counted")
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for fdCount(t) > before {
		if time.Now().After(deadline) {
			t.Fatalf("descriptors: %d, were %d", fdCount(t), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Idle sessions close after SessionTimeout, on both transports.
func TestSessionTimeout(t *testing.T) {
	ts := start(t, Options{SessionTimeout: 300 * time.Millisecond})
	cs := connect(t, ts.URL(), "")
	id := cs.ID()
	sse, err := tryConnect(t, &mcp.SSEClientTransport{Endpoint: ts.base + "/sse"})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "the sessions to expire", func() bool {
		n := 0
		for range ts.opts.Server.Sessions() {
			n++
		}
		return n == 0
	})
	if code, _, _ := rawRequest(t, http.MethodPost, ts.URL(), "", map[string]string{"Mcp-Session-Id": id}, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); code != http.StatusNotFound {
		t.Errorf("a request on the expired session: %d, want 404", code)
	}
	done := make(chan error, 1)
	go func() { done <- sse.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("the SSE client did not see its session end")
	}
}

// A session belongs to the principal that opened it: another token can
// neither drive nor delete it, over Streamable HTTP or SSE.
func TestSessionBelongsToPrincipal(t *testing.T) {
	ts := start(t, Options{TokenFile: writeTokens(t, "alice tok-alice\nbob tok-bob\ntok-bare\n")})
	cs := connect(t, ts.URL(), "tok-alice")
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if code, _, body := rawRequest(t, http.MethodPost, ts.URL(), "tok-bob", map[string]string{"Mcp-Session-Id": cs.ID()}, ping); code != http.StatusForbidden {
		t.Errorf("bob drives alice's session: %d %s", code, body)
	}
	if code, _, _ := rawRequest(t, http.MethodDelete, ts.URL(), "tok-bob", map[string]string{"Mcp-Session-Id": cs.ID()}, ""); code != http.StatusForbidden {
		t.Errorf("bob deletes alice's session: %d", code)
	}
	if got := whoami(t, cs); got != "alice|alice" {
		t.Errorf("alice after bob's tries: %q", got)
	}
	if got := whoami(t, connect(t, ts.URL(), "tok-bare")); got != "token:"+sha12("tok-bare")+"|token:"+sha12("tok-bare") {
		t.Errorf("an unnamed token's principal: %q", got)
	}

	// SSE: alice opens a stream; bob posts to its endpoint.
	req, _ := http.NewRequest(http.MethodGet, ts.base+"/sse", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := httpClient("tok-alice").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	endpoint := readEndpoint(t, resp.Body)
	if code, _, body := rawRequest(t, http.MethodPost, ts.base+endpoint, "tok-bob", nil, initialize); code != http.StatusForbidden {
		t.Errorf("bob posts to alice's SSE session: %d %s", code, body)
	}
	if code, _, body := rawRequest(t, http.MethodPost, ts.base+endpoint, "tok-alice", nil, initialize); code != http.StatusAccepted {
		t.Errorf("alice posts to her SSE session: %d %s", code, body)
	}
	sse, err := tryConnect(t, &mcp.SSEClientTransport{Endpoint: ts.base + "/sse", HTTPClient: httpClient("tok-bob")})
	if err != nil {
		t.Fatal(err)
	}
	if got := whoami(t, sse); got != "bob|" {
		t.Errorf("bob over SSE: %q, want bob (SSE carries no TokenInfo)", got)
	}
	if !strings.Contains(ts.logs.String(), "status=403") {
		t.Errorf("the 403s are not logged:\n%s", ts.logs)
	}
}

func readEndpoint(t *testing.T, r io.Reader) string {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if e, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return e
		}
	}
	t.Fatal("no endpoint event")
	return ""
}

// Each principal holds at most MaxSessionsPerPrincipal sessions, Streamable
// HTTP and SSE together.
func TestSessionsCappedPerPrincipal(t *testing.T) {
	ts := start(t, Options{MaxSessionsPerPrincipal: 2, TokenFile: writeTokens(t, "alice tok-alice\nbob tok-bob\n")})
	a1 := connect(t, ts.URL(), "tok-alice")
	if _, err := tryConnect(t, &mcp.SSEClientTransport{Endpoint: ts.base + "/sse", HTTPClient: httpClient("tok-alice")}); err != nil {
		t.Fatal(err)
	}
	code, hdr, body := rawRequest(t, http.MethodPost, ts.URL(), "tok-alice", nil, initialize)
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
		t.Errorf("alice's third session: %d %s", code, body)
	}
	if _, err := tryConnect(t, &mcp.SSEClientTransport{Endpoint: ts.base + "/sse", HTTPClient: httpClient("tok-alice")}); err == nil {
		t.Error("alice's third session, over SSE, was accepted")
	}
	connect(t, ts.URL(), "tok-bob") // another principal is not held back
	a1.Close()                      // DELETE: a slot comes free
	connect(t, ts.URL(), "tok-alice")
	if !strings.Contains(ts.logs.String(), "status=429") {
		t.Errorf("the 429 is not logged:\n%s", ts.logs)
	}
}

// The cap holds when one principal opens many sessions at once over both
// transports: no more than the cap are ever open.
func TestSessionCapHoldsUnderRace(t *testing.T) {
	const limit, tries = 3, 40
	ts := start(t, Options{MaxSessionsPerPrincipal: limit, TokenFile: writeTokens(t, "alice tok-alice\n")})
	var wg sync.WaitGroup
	opened := make(chan *mcp.ClientSession, tries)
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: ts.URL(), HTTPClient: httpClient("tok-alice"), DisableStandaloneSSE: true}
			if i%2 == 0 {
				tr = &mcp.SSEClientTransport{Endpoint: ts.base + "/sse", HTTPClient: httpClient("tok-alice")}
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "racer", Version: "1"}, nil)
			if cs, err := client.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}); err == nil {
				opened <- cs
			}
		}()
	}
	wg.Wait()
	close(opened)
	n := 0
	for cs := range opened {
		n++
		t.Cleanup(func() { cs.Close() })
	}
	if n != limit {
		t.Errorf("%d sessions opened at once by one principal, want the cap, %d", n, limit)
	}
}

// The Host and Origin checks ignore case, and refuse other hosts.
func TestHostCheck(t *testing.T) {
	ts := start(t, Options{})
	port := ts.ln.Addr().(*net.TCPAddr).Port
	for _, c := range []struct {
		header map[string]string
		ok     bool
	}{
		{map[string]string{"Host": fmt.Sprintf("LOCALHOST:%d", port)}, true},
		{map[string]string{"Host": fmt.Sprintf("LocalHost:%d", port), "Origin": fmt.Sprintf("http://LOCALHOST:%d", port)}, true},
		{map[string]string{"Host": fmt.Sprintf("attacker.example:%d", port)}, false},
		{map[string]string{"Origin": "http://attacker.example"}, false},
		{map[string]string{"Origin": fmt.Sprintf("http://127.0.0.1:%d", port+1)}, false},
		// IPv6 literal; no port where the served one is not 80; a trailing
		// dot (another name, to a browser).
		{map[string]string{"Host": fmt.Sprintf("[::1]:%d", port)}, true},
		{map[string]string{"Host": "localhost"}, false},
		{map[string]string{"Host": "[::1]"}, false},
		{map[string]string{"Host": fmt.Sprintf("localhost.:%d", port)}, false},
		{map[string]string{"Origin": "http://localhost"}, false},
		{map[string]string{"Origin": "null"}, false},
		// A page on another site makes a "no-cors" GET without Origin.
		{map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{map[string]string{"Sec-Fetch-Site": "same-site"}, false},
		{map[string]string{"Sec-Fetch-Site": "none"}, true},
	} {
		code, _, _ := rawRequest(t, http.MethodPost, ts.URL(), "", c.header, initialize)
		if (code != http.StatusForbidden) != c.ok {
			t.Errorf("%v: %d", c.header, code)
		}
		if !c.ok {
			if code := sseStatus(t, ts.base+"/sse", c.header); code != http.StatusForbidden {
				t.Errorf("/sse %v: %d, want 403", c.header, code)
			}
		}
	}
}

// sseStatus is the status of GET url, whose body (an accepted event stream)
// is not read.
func sseStatus(t *testing.T, url string, header map[string]string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A body over MaxBodyBytes is refused (413), on /mcp and /sse, and logged.
func TestBodyLimit(t *testing.T) {
	ts := start(t, Options{MaxBodyBytes: 1000})
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("p", 5000) + `"}}`
	if code, _, _ := rawRequest(t, http.MethodPost, ts.URL(), "", nil, big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("/mcp: %d, want 413", code)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.base+"/sse", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	endpoint := readEndpoint(t, resp.Body)
	if code, _, _ := rawRequest(t, http.MethodPost, ts.base+endpoint, "", nil, big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("/sse: %d, want 413", code)
	}
	if !strings.Contains(ts.logs.String(), "status=413") {
		t.Errorf("the 413 is not logged:\n%s", ts.logs)
	}
}

// Session ids stay out of info logs.
func TestSessionIDsNotLoggedAtInfo(t *testing.T) {
	ts := start(t, Options{})
	cs := connect(t, ts.URL(), "")
	whoami(t, cs)
	cs.Close()
	if strings.Contains(ts.logs.String(), cs.ID()) {
		t.Errorf("a session id was logged at info:\n%s", ts.logs)
	}
	// At debug it may be.
	var buf syncbuf.Buffer
	log := slog.New(QuietSessionIDs(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	log.Info("server session connected", "session_id", "abc123")
	if !strings.Contains(buf.String(), "level=DEBUG") || !strings.Contains(buf.String(), "abc123") {
		t.Errorf("at debug: %q", buf.String())
	}
}

func sha12(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

// Callers that never read a large response hold no memory past the write
// bound: each is cut off, and the heap and the descriptors come back to
// where they were. (Before the write deadline, four such callers pinned
// 760 MB for as long as they kept their connections open.)
func TestNonReadingClientsReleaseMemory(t *testing.T) {
	const (
		bound   = 500 * time.Millisecond
		callers = 4
		size    = 8 << 20
	)
	ts := start(t, Options{WriteTimeout: bound})
	cs := connect(t, ts.URL(), "")
	whoami(t, cs)
	fds, heap := fdCount(t), heapInUse()

	open := map[string]net.Conn{}
	for i := range callers {
		conn, err := net.Dial("tcp", ts.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.(*net.TCPConn).SetReadBuffer(4096)
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big","arguments":{"N":%d}}}`, 10+i, size)
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s", ts.ln.Addr(), cs.ID(), len(body), body)
		open[conn.LocalAddr().String()] = conn
	}
	// (The slack is for building and encoding the responses under -race.)
	deadline := time.After(bound + 60*time.Second)
	for len(open) > 0 {
		select {
		case addr := <-ts.closed:
			if c, ok := open[addr]; ok {
				c.Close()
				delete(open, addr)
			}
		case <-deadline:
			t.Fatalf("%d of %d non-reading callers were never cut off", len(open), callers)
		}
	}
	waitFDs(t, fds)
	const slack = 16 << 20
	if now := heapInUse(); now > heap+slack {
		t.Errorf("heap in use after the cut-offs: %d MiB, was %d MiB before %d callers asked for %d MiB each",
			now>>20, heap>>20, callers, size>>20)
	}
	if got := whoami(t, cs); got != AnonymousPrincipal+"|" {
		t.Errorf("after the cut-offs: %q", got)
	}
}

// heapInUse is the bytes of heap in use after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// switchable is a bearer token that a test changes while requests run.
type switchable struct {
	mu    sync.Mutex
	token string
}

func (s *switchable) set(tok string) { s.mu.Lock(); s.token = tok; s.mu.Unlock() }

func (s *switchable) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	tok := s.token
	s.mu.Unlock()
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return http.DefaultTransport.RoundTrip(r)
}

// The token file is reloaded (SIGHUP) while requests run: a rotated token
// keeps its principal's sessions, the old one is refused from then on, a
// file that fails to load keeps the tokens in force, and nothing races.
func TestReloadWhileRequestsRun(t *testing.T) {
	path := writeTokens(t, "alice tok-one\n")
	ts := start(t, Options{TokenFile: path})
	tok := &switchable{token: "tok-one"}
	cs, err := tryConnect(t, &mcp.StreamableClientTransport{Endpoint: ts.URL(), HTTPClient: &http.Client{Transport: tok}, DisableStandaloneSSE: true})
	if err != nil {
		t.Fatal(err)
	}
	// Calls run all along; each must come back as alice.
	stop := make(chan struct{})
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
				cancel()
				if err == nil && res.Content[0].(*mcp.TextContent).Text != "alice|alice" {
					err = fmt.Errorf("principal %q", res.Content[0].(*mcp.TextContent).Text)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	// Both tokens in force, then the client moves to the new one, then the
	// old one goes; a broken file in between changes nothing.
	for i := range 20 {
		os.WriteFile(path, []byte("alice tok-one\nalice tok-two\n"), 0o600)
		if err := ts.ReloadTokens(); err != nil {
			t.Fatal(err)
		}
		tok.set([]string{"tok-one", "tok-two"}[i%2])
		os.WriteFile(path, []byte("alice tok one two\n"), 0o600)
		if err := ts.ReloadTokens(); err == nil {
			t.Fatal("a broken token file loaded")
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("a call during the reloads: %v", err)
	default:
	}
	// The old token goes. (Only now: a request that set out with it while
	// it was in force would rightly be refused once it is gone.)
	tok.set("tok-two")
	os.WriteFile(path, []byte("alice tok-two\n"), 0o600)
	if err := ts.ReloadTokens(); err != nil {
		t.Fatal(err)
	}
	if got := whoami(t, cs); got != "alice|alice" {
		t.Errorf("the session after the rotation: %q", got)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if code, _, _ := rawRequest(t, http.MethodPost, ts.URL(), "tok-one", map[string]string{"Mcp-Session-Id": cs.ID()}, ping); code != http.StatusUnauthorized {
		t.Errorf("the rotated-out token: %d, want 401", code)
	}
}

// noHost sends GET path over HTTP/1.0 without a Host header (a health
// check's probe) and returns the status line and the rest.
func noHost(t *testing.T, addr, path string) (status, rest string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	status, rest, _ = strings.Cut(string(b), "\r\n")
	return status, rest
}

// /healthz and /readyz keep to the Host rule of /mcp (a page that rebinds
// its name to colibri's address could read the registry's error from
// /readyz), with the allowances for probes: no Host, or an IP literal.
// This fails if the probes are served whatever the Host.
func TestProbesKeepToTheHostRule(t *testing.T) {
	const reason = "external-mcp.json: $.servers.x: the reason"
	ts := start(t, Options{Ready: func() (bool, string) { return false, reason }})
	addr := ts.ln.Addr().String()
	port := ts.ln.Addr().(*net.TCPAddr).Port
	for _, path := range []string{"/readyz", "/healthz"} {
		for _, c := range []struct {
			header map[string]string
			ok     bool
		}{
			{map[string]string{"Host": fmt.Sprintf("localhost:%d", port)}, true},
			{map[string]string{"Host": fmt.Sprintf("attacker.example:%d", port)}, false},
			{map[string]string{"Host": "attacker.example"}, false},
			// A probe that dials an address, any address.
			{map[string]string{"Host": "10.1.2.3:8080"}, true},
			{map[string]string{"Host": "[2001:db8::1]"}, true},
			// Still no page of another site.
			{map[string]string{"Host": "10.1.2.3", "Origin": "http://attacker.example"}, false},
			{map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		} {
			code, body := get(t, ts.base+path, c.header)
			if (code != http.StatusForbidden) != c.ok {
				t.Errorf("%s %v: %d", path, c.header, code)
			}
			if !c.ok && strings.Contains(body, reason) {
				t.Errorf("%s %v: a refused request read %q", path, c.header, body)
			}
		}
		status, rest := noHost(t, addr, path)
		if strings.Contains(status, "403") {
			t.Errorf("%s without a Host: %s", path, status)
		}
		if path == "/readyz" && !strings.Contains(rest, reason) {
			t.Errorf("/readyz without a Host: %s %q, want the reason", status, rest)
		}
	}
}

// --allowed-host names a proxy's public name: /mcp, /sse and the probes
// accept it in Host and Origin, with any port, and nothing else besides
// the served address. This fails if the allowed names are not consulted.
func TestAllowedHosts(t *testing.T) {
	ts := start(t, Options{AllowedHosts: []string{"mcp.example.com"}})
	port := ts.ln.Addr().(*net.TCPAddr).Port
	for _, c := range []struct {
		header map[string]string
		ok     bool
	}{
		{map[string]string{"Host": "mcp.example.com"}, true},
		{map[string]string{"Host": "MCP.Example.com:443", "Origin": "https://mcp.example.com"}, true},
		{map[string]string{"Host": fmt.Sprintf("127.0.0.1:%d", port)}, true},
		{map[string]string{"Host": "other.example.com"}, false},
		{map[string]string{"Host": "mcp.example.com", "Origin": "https://other.example.com"}, false},
		{map[string]string{"Host": "mcp.example.com.evil.example"}, false},
	} {
		code, _, _ := rawRequest(t, http.MethodPost, ts.URL(), "", c.header, initialize)
		if (code != http.StatusForbidden) != c.ok {
			t.Errorf("/mcp %v: %d", c.header, code)
		}
		if code, _ := get(t, ts.base+"/readyz", c.header); (code != http.StatusForbidden) != c.ok {
			t.Errorf("/readyz %v: %d", c.header, code)
		}
	}
	for _, bad := range []string{"", "https://mcp.example.com", "mcp.example.com:443", "mcp.example.com/x"} {
		if err := CheckAllowedHost(bad); err == nil {
			t.Errorf("CheckAllowedHost(%q) = nil", bad)
		}
	}
	for _, good := range []string{"mcp.example.com", "10.0.0.1", "::1"} {
		if err := CheckAllowedHost(good); err != nil {
			t.Errorf("CheckAllowedHost(%q): %v", good, err)
		}
	}
}
