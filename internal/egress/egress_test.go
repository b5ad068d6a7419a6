package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/egress/dest"
)

// world is a proxy with counters, a resolver of its own and loopback
// targets.
type world struct {
	p                  *Proxy
	mu                 sync.Mutex
	refused, connected map[string]int
}

func newWorld(t *testing.T, opts Options) *world {
	t.Helper()
	w := &world{refused: map[string]int{}, connected: map[string]int{}}
	opts.Refused = func(s string) { w.mu.Lock(); w.refused[s]++; w.mu.Unlock() }
	opts.Connected = func(s string) { w.mu.Lock(); w.connected[s]++; w.mu.Unlock() }
	if opts.Resolve == nil {
		opts.Resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "loopback.test":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, errors.New("no such host")
		}
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	w.p = p
	return w
}

func (w *world) counts(server string) (refused, connected int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refused[server], w.connected[server]
}

func dests(t *testing.T, ss ...string) []dest.Destination {
	var out []dest.Destination
	for _, s := range ss {
		d, err := dest.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// client is an HTTP client through proxyURL that trusts srv's certificate.
func client(proxyURL string, srv *httptest.Server) *http.Client {
	u, _ := url.Parse(proxyURL)
	tr := &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}
	if srv != nil && srv.TLS != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	}
	return &http.Client{Transport: tr}
}

func get(c *http.Client, u string) (int, string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// Through CONNECT: a listed loopback literal is reached; an unlisted one,
// and a listed name that resolves to loopback, are refused (403 naming the
// destination), each refusal counted and each connection too.
func TestConnectReachesWhatIsListedOnly(t *testing.T) {
	w := newWorld(t, Options{})
	target := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "hello") }))
	defer target.Close()
	other := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { t.Error("the unlisted server was reached") }))
	defer other.Close()
	tu, _ := url.Parse(target.URL)
	g := w.p.Grant("gh", dests(t, tu.Host, "loopback.test"), 0)
	defer g.Revoke()

	if code, body, err := get(client(g.URL, target), target.URL); err != nil || code != 200 || body != "hello" {
		t.Fatalf("listed literal: %d %q %v", code, body, err)
	}
	if _, err := client(g.URL, other).Get(other.URL); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("unlisted literal: %v, want 403", err)
	}
	_, port, _ := net.SplitHostPort(tu.Host)
	if _, err := client(g.URL, target).Get("https://loopback.test:" + port); err == nil {
		t.Error("a name resolving to loopback was carried")
	}
	if refused, connected := w.counts("gh"); refused != 2 || connected != 1 {
		t.Errorf("refused %d, connected %d; want 2 and 1", refused, connected)
	}
}

// The credential: none, a wrong one or a revoked one gets 407; one
// server's credential does not reach another server's destination.
func TestProxyAnswersOnlyItsServers(t *testing.T) {
	w := newWorld(t, Options{})
	a := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "a") }))
	defer a.Close()
	b := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "b") }))
	defer b.Close()
	au, _ := url.Parse(a.URL)
	bu, _ := url.Parse(b.URL)
	ga := w.p.Grant("a", dests(t, au.Host), 0)
	gb := w.p.Grant("b", dests(t, bu.Host), 0)
	defer gb.Revoke()
	for name, proxy := range map[string]string{
		"no credential":    "http://" + w.p.Addr().String(),
		"a wrong one":      "http://colibri:nottheone@" + w.p.Addr().String(),
		"another's server": ga.URL,
	} {
		_, err := client(proxy, b).Get(b.URL)
		want := "Proxy Authentication Required"
		if name == "another's server" {
			want = "Forbidden"
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", name, err, want)
		}
	}
	ga.Revoke()
	if _, err := client(ga.URL, a).Get(a.URL); err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") {
		t.Errorf("revoked: %v, want 407", err)
	}
	if code, body, err := get(client(gb.URL, b), b.URL); err != nil || code != 200 || body != "b" {
		t.Errorf("b's own: %d %q %v", code, body, err)
	}
}

// Plain HTTP forwarding: to the request URI's host, never to a differing
// Host header's; the server's credential is not forwarded.
func TestForwardPlainHTTP(t *testing.T) {
	w := newWorld(t, Options{})
	var seen http.Header
	target := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		io.WriteString(rw, "plain "+r.URL.Path)
	}))
	defer target.Close()
	tu, _ := url.Parse(target.URL)
	g := w.p.Grant("web", dests(t, tu.Host), 0)
	defer g.Revoke()
	c := client(g.URL, nil)
	if code, body, err := get(c, target.URL+"/x"); err != nil || code != 200 || body != "plain /x" {
		t.Fatalf("plain: %d %q %v", code, body, err)
	}
	if seen.Get("Proxy-Authorization") != "" {
		t.Error("the credential was forwarded")
	}
	req, _ := http.NewRequest("GET", target.URL+"/y", nil)
	req.Host = "metadata.internal"
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("differing Host: %v %v, want 403", resp, err)
	}
}

// A server's idle keep-alive connection to the proxy is closed after
// IdleTimeout: idle connections cannot pile up in colibri.
func TestIdleConnectionsAreClosed(t *testing.T) {
	w := newWorld(t, Options{IdleTimeout: 200 * time.Millisecond})
	target := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { io.WriteString(rw, "ok") }))
	defer target.Close()
	tu, _ := url.Parse(target.URL)
	g := w.p.Grant("web", dests(t, tu.Host), 0)
	defer g.Revoke()
	pu, _ := url.Parse(g.URL)
	c, err := net.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pw, _ := pu.User.Password()
	fmt.Fprintf(c, "GET %s/ HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", target.URL, tu.Host,
		base64.StdEncoding.EncodeToString([]byte("colibri:"+pw)))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the request: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second)) // the bound under test is 200 ms
	start := time.Now()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("the idle connection: %v after %v, want it closed by the proxy (EOF)", err, time.Since(start))
	}
}

// At most max_connections tunnels at once: the next is refused (429) while
// they are held, and counted.
func TestMaxConnections(t *testing.T) {
	w := newWorld(t, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	g := w.p.Grant("db", dests(t, ln.Addr().String()), 1)
	defer g.Revoke()
	tunnel := func() (net.Conn, string) {
		c, err := net.Dial("tcp", w.p.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(g.URL)
		pw, _ := u.User.Password()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", ln.Addr(), ln.Addr(),
			basic("colibri", pw))
		status, _ := bufio.NewReader(c).ReadString('\n')
		return c, status
	}
	first, status := tunnel()
	defer first.Close()
	if !strings.Contains(status, "200") {
		t.Fatalf("first: %q", status)
	}
	second, status := tunnel()
	defer second.Close()
	if !strings.Contains(status, "429") {
		t.Errorf("second while the first is held: %q, want 429", status)
	}
	if refused, _ := w.counts("db"); refused != 1 {
		t.Errorf("refused %d, want 1", refused)
	}
}

// With an operator's proxy (HTTPS_PROXY in colibri's environment) the
// egress proxy connects through it, its credential sent to it.
func TestChainsToTheOperatorsProxy(t *testing.T) {
	target := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "far") }))
	defer target.Close()
	tu, _ := url.Parse(target.URL)
	operator := newWorld(t, Options{})
	og := operator.p.Grant("colibri itself", dests(t, tu.Host), 0)
	up, _ := url.Parse(og.URL)
	w := newWorld(t, Options{Upstream: up})
	g := w.p.Grant("gh", dests(t, tu.Host), 0)
	if code, body, err := get(client(g.URL, target), target.URL); err != nil || code != 200 || body != "far" {
		t.Fatalf("chained: %d %q %v", code, body, err)
	}
	if _, connected := operator.counts("colibri itself"); connected != 1 {
		t.Errorf("the operator's proxy carried %d connections, want 1", connected)
	}
}

func basic(user, pw string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
}

// Connections that never send a request cannot pile up in colibri: past
// MaxPending, the oldest such connection is closed at once (not after
// the 10 s its first header has), and a server's request still goes
// through.
func TestPendingConnectionsAreBounded(t *testing.T) {
	w := newWorld(t, Options{MaxPending: 4})
	target := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { io.WriteString(rw, "ok") }))
	defer target.Close()
	tu, _ := url.Parse(target.URL)
	g := w.p.Grant("web", dests(t, tu.Host), 0)
	defer g.Revoke()
	var idle []net.Conn
	for range 6 {
		c, err := net.Dial("tcp", w.p.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	for i, c := range idle[:2] {
		c.SetReadDeadline(time.Now().Add(5 * time.Second)) // the header's own bound is 10 s
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("idle connection %d of 6 (4 may wait): %v, want it closed (EOF)", i, err)
		}
	}
	if code, body, err := get(client(g.URL, nil), target.URL); err != nil || code != 200 || body != "ok" {
		t.Errorf("a server's request among idle connections: %d %q %v", code, body, err)
	}
}

// max_connections counts connections, not requests: a keep-alive
// connection holds its slot while idle, so that a server cannot pile up
// idle connections one request each; a request without a credential gets
// its 407 and the connection is closed.
func TestMaxConnectionsCountsKeepAlive(t *testing.T) {
	w := newWorld(t, Options{})
	target := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { io.WriteString(rw, "ok") }))
	defer target.Close()
	tu, _ := url.Parse(target.URL)
	g := w.p.Grant("web", dests(t, tu.Host), 2)
	defer g.Revoke()
	pu, _ := url.Parse(g.URL)
	pw, _ := pu.User.Password()
	ask := func(auth string) (*bufio.Reader, net.Conn, int) {
		c, err := net.Dial("tcp", w.p.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "GET %s/ HTTP/1.1\r\nHost: %s\r\n%s\r\n", target.URL, tu.Host, auth)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return br, c, resp.StatusCode
	}
	cred := "Proxy-Authorization: Basic " + basic("colibri", pw) + "\r\n"
	for i := range 2 {
		if _, _, code := ask(cred); code != 200 {
			t.Fatalf("keep-alive connection %d: %d", i, code)
		}
	}
	br, c, code := ask(cred)
	if code != http.StatusTooManyRequests {
		t.Errorf("a third connection while two idle ones are held: %d, want 429", code)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("the refused connection: %v, want it closed (EOF)", err)
	}
	br, c, code = ask("")
	if code != http.StatusProxyAuthRequired {
		t.Errorf("without a credential: %d, want 407", code)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("the connection without a credential: %v, want it closed (EOF)", err)
	}
}

// The operator's proxy's credential is never sent in the clear to an
// https:// proxy (TLS first, its certificate checked), and a proxy of
// another scheme (socks5://) is refused when the proxy starts, not spoken
// HTTP to.
func TestUpstreamCredentialNotInTheClear(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 4096)
		n, _ := c.Read(b) // a TLS ClientHello, or a CONNECT in the clear: one write either way
		got <- string(b[:n])
	}()
	up, _ := url.Parse("https://op:s3cret-pw@" + ln.Addr().String())
	w := newWorld(t, Options{Upstream: up, Resolve: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("192.0.2.80")}, nil // never dialled: the upstream is
	}})
	g := w.p.Grant("gh", dests(t, "192.0.2.80:443"), 0)
	defer g.Revoke()
	c, err := net.Dial("tcp", w.p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pu, _ := url.Parse(g.URL)
	pw, _ := pu.User.Password()
	fmt.Fprintf(c, "CONNECT 192.0.2.80:443 HTTP/1.1\r\nHost: 192.0.2.80:443\r\nProxy-Authorization: Basic %s\r\n\r\n", basic("colibri", pw))
	select {
	case b := <-got:
		if b == "" || b[0] != 0x16 || strings.Contains(b, basic("op", "s3cret-pw")) {
			t.Errorf("the https:// operator's proxy was spoken to in the clear: %q", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the operator's proxy was never reached")
	}
	socks, _ := url.Parse("socks5://op:pw@127.0.0.1:1080")
	if _, err := New(Options{Upstream: socks}); err == nil || !strings.Contains(err.Error(), "socks5") {
		t.Errorf("a socks5:// operator's proxy: %v, want an error naming it", err)
	}
}

// lockedBuffer is a log's output, safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A server refused in a loop, on one keep-alive connection, does not
// flood colibri's log: at most RefusalLogs lines in 10 s, every refusal
// still counted; a destination as long as a header allows is cut short in
// the line.
func TestRefusalLogsAreBounded(t *testing.T) {
	var logs lockedBuffer
	w := newWorld(t, Options{RefusalLogs: 3, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	g := w.p.Grant("loop", dests(t, "192.0.2.1:443"), 0)
	defer g.Revoke()
	pu, _ := url.Parse(g.URL)
	pw, _ := pu.User.Password()
	c, err := net.Dial("tcp", w.p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	long := strings.Repeat("a", 10000) + ".example"
	for i := range 50 {
		fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", long, long, basic("colibri", pw))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("request %d: %d, want 403", i, resp.StatusCode)
		}
	}
	if n := strings.Count(logs.String(), "egress refused"); n != 3 {
		t.Errorf("%d refusals logged of 50, want 3", n)
	}
	if len(logs.String()) > 3*2000 {
		t.Errorf("the log holds %d bytes for 3 lines: the destination was not cut short", len(logs.String()))
	}
	if refused, _ := w.counts("loop"); refused != 50 {
		t.Errorf("refused %d, want 50 counted", refused)
	}
}

// A raw absolute-form request whose Host header names another host: the
// destination sees the request URI's host, never the header's (net/http
// drops the header before the proxy sees it, so the proxy cannot answer
// 403 here; what matters is that the header is not carried).
func TestForwardCarriesTheURIsHost(t *testing.T) {
	w := newWorld(t, Options{})
	hosts := make(chan string, 1)
	target := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { hosts <- r.Host }))
	defer target.Close()
	tu, _ := url.Parse(target.URL)
	g := w.p.Grant("web", dests(t, tu.Host), 0)
	defer g.Revoke()
	pu, _ := url.Parse(g.URL)
	pw, _ := pu.User.Password()
	c, err := net.Dial("tcp", w.p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s/ HTTP/1.1\r\nHost: metadata.internal\r\nProxy-Authorization: Basic %s\r\n\r\n", target.URL, basic("colibri", pw))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the request: %d", resp.StatusCode)
	}
	if h := <-hosts; h != tu.Host {
		t.Errorf("the destination saw Host %q, want the URI's %q", h, tu.Host)
	}
}
