// Package egress is the sandbox's egress proxy: a sandboxed server whose
// "net" is a list of destinations reaches those alone, through an HTTP
// proxy colibri runs (HTTP CONNECT, and plain HTTP forwarding), which
// answers only that server's processes, by a credential of their own in
// the proxy URL (docs/security.md, "Egress by destination").
//
//	p, err := egress.New(egress.Options{Logger: log})
//	g := p.Grant("github", dests, 64)   // g.URL: http://colibri:TOKEN@127.0.0.1:PORT
//	defer g.Revoke()
//
// The proxy resolves names itself and connects to the address it checked
// (never resolving twice), and refuses a name that resolves into a
// loopback, link-local, private, carrier-grade NAT, benchmark, multicast
// or other special range (IPv4-mapped, NAT64 and 6to4 addresses are read
// for the IPv4 address they embed) unless that address is listed as a
// literal.
package egress

import (
	"bufio"
	"container/list"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/egress/dest"
)

// Options configure a Proxy. The zero value of each field means its default.
type Options struct {
	// Logger is told each refusal at warn (server, destination, why); nil
	// discards.
	Logger *slog.Logger
	// Resolve looks a name up; nil: the system's resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to a checked address; nil: a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Upstream is the operator's own proxy colibri must reach the network
	// through (HTTPS_PROXY in colibri's environment): connections are
	// made through it, with CONNECT; nil: directly. An http:// proxy is
	// spoken to in the clear (port 80 by default), an https:// one over
	// TLS (443), its certificate checked; any other scheme (socks5://) is
	// New's error: its credential is never sent where it cannot be read
	// as meant.
	Upstream *url.URL
	// Refused and Connected count, per server, each refusal and each
	// connection made (colibri_egress_refused_total,
	// colibri_egress_connections_total); nil: not counted.
	Refused, Connected func(server string)
	// Listen is the address to listen on; "": 127.0.0.1:0.
	Listen string
	// DialTimeout bounds each connection's dial; 0: 10 s.
	DialTimeout time.Duration
	// IdleTimeout bounds how long a server's connection to the proxy may
	// wait for its next plain HTTP request (keep-alive); 0: 30 s. The
	// first request's header has 10 s.
	IdleTimeout time.Duration
	// MaxPending bounds the connections accepted that have not yet sent a
	// request with a granted credential, all servers (and any local
	// process) together: past it the oldest such connection is closed, so
	// that connections which never ask anything cannot pile up in colibri
	// within their 10 s; 0: 256.
	MaxPending int
	// RefusalLogs bounds the refusals logged per server (and for requests
	// without a credential, together) in each 10 s: past it they are
	// counted, not logged, and the next line logged says how many were
	// left out; 0: 20.
	RefusalLogs int
}

// Proxy is the egress proxy of every sandboxed server with a "net" list.
// It is safe for concurrent use.
type Proxy struct {
	opts   Options
	ln     net.Listener
	srv    *http.Server
	mu     sync.Mutex
	grants map[[32]byte]*Grant // by the SHA-256 of the credential
	// pending are the connections not yet attributed to a grant, oldest
	// first (each a *conn).
	pending list.List
	// logged are the refusals logged in the current 10 s, per server.
	logged map[string]*logWindow
}

// logWindow is a server's refusals logged since start, and those left
// out.
type logWindow struct {
	start          time.Time
	logged, missed int
}

// Grant is one server's access through the proxy.
type Grant struct {
	p      *Proxy
	key    [32]byte
	Server string
	// URL is the proxy URL the server's environment carries, its
	// credential in the user information.
	URL   string
	dests []dest.Destination
	conns chan struct{} // a slot per connection at once, held while it is open
}

// conn is a connection to the proxy: pending until its first request with
// a granted credential, then attributed to that grant, whose slot it
// holds until it closes.
type conn struct {
	net.Conn
	p         *Proxy
	closeOnce sync.Once
	// Under p.mu:
	pending *list.Element // in p.pending; nil once attributed, evicted or closed
	g       *Grant        // the grant whose slot it holds
	closed  bool
}

// Close releases the connection's place: in the pending list, or its
// grant's slot.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.p.mu.Lock()
		if c.pending != nil {
			c.p.pending.Remove(c.pending)
			c.pending = nil
		}
		g := c.g
		c.g, c.closed = nil, true
		c.p.mu.Unlock()
		if g != nil {
			<-g.conns
		}
	})
	return c.Conn.Close()
}

// CloseWrite half-closes the connection, where it can be.
func (c *conn) CloseWrite() error {
	closeWrite(c.Conn)
	return nil
}

type connKey struct{}

// listener tracks each connection it accepts as pending, and closes the
// oldest pending one past MaxPending.
type listener struct {
	net.Listener
	p *Proxy
}

func (l listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &conn{Conn: nc, p: l.p}
	var evicted *conn
	l.p.mu.Lock()
	c.pending = l.p.pending.PushBack(c)
	if l.p.pending.Len() > l.p.opts.MaxPending {
		evicted = l.p.pending.Remove(l.p.pending.Front()).(*conn)
		evicted.pending = nil
	}
	l.p.mu.Unlock()
	if evicted != nil {
		l.p.opts.Logger.Debug("egress: closed a connection that had not asked anything yet", "pending", l.p.opts.MaxPending)
		evicted.Conn.Close()
	}
	return c, nil
}

// attach attributes c to g, taking one of g's slots for as long as c is
// open; a refusal where g holds all of its slots, or c is another grant's.
func (p *Proxy) attach(c *conn, g *Grant) *refusal {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.g == g {
		return nil
	}
	if c.g != nil {
		return &refusal{http.StatusForbidden, "the connection already carries another server's requests"}
	}
	full := &refusal{http.StatusTooManyRequests, fmt.Sprintf("the server already holds its %d connections (max_connections)", cap(g.conns))}
	if c.closed {
		return full
	}
	select {
	case g.conns <- struct{}{}:
	default:
		return full
	}
	c.g = g
	if c.pending != nil {
		p.pending.Remove(c.pending)
		c.pending = nil
	}
	return nil
}

// New starts a proxy listening on loopback.
func New(opts Options) (*Proxy, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Resolve == nil {
		opts.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.Dial == nil {
		d := &net.Dialer{Timeout: opts.DialTimeout}
		opts.Dial = d.DialContext
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = 30 * time.Second
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 256
	}
	if opts.RefusalLogs <= 0 {
		opts.RefusalLogs = 20
	}
	if u := opts.Upstream; u != nil && u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("egress proxy: the operator's proxy %s://%s: only http:// and https:// proxies can be chained to", u.Scheme, u.Host)
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p := &Proxy{opts: opts, ln: ln, grants: map[[32]byte]*Grant{}, logged: map[string]*logWindow{}}
	// Without IdleTimeout (and no ReadTimeout) net/http holds an idle
	// keep-alive connection forever: a server could pile them up in
	// colibri, each a goroutine and its buffers.
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: opts.IdleTimeout, MaxHeaderBytes: 64 << 10,
		ErrorLog:    slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }}
	go p.srv.Serve(listener{ln, p})
	return p, nil
}

// ListenUnix serves the proxy on a pathname Unix socket as well (mode
// 0600), for the forwarders of servers in network namespaces of their own;
// Close removes it.
func (p *Proxy) ListenUnix(path string) error {
	os.Remove(path) // a socket left by a colibri killed before it could remove it
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("egress proxy: %w", err)
	}
	go p.srv.Serve(listener{ln, p})
	return nil
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() netip.AddrPort { return p.ln.Addr().(*net.TCPAddr).AddrPort() }

// Close stops the proxy and every connection through it.
func (p *Proxy) Close() error { return p.srv.Close() }

// Grant lets the holder of the returned grant's credential reach dests,
// at most maxConns connections at once (64 when 0 or less).
func (p *Proxy) Grant(server string, dests []dest.Destination, maxConns int) *Grant {
	if maxConns <= 0 {
		maxConns = 64
	}
	b := make([]byte, 24)
	rand.Read(b)
	token := hex.EncodeToString(b)
	g := &Grant{p: p, key: sha256.Sum256([]byte(token)), Server: server, dests: dests, conns: make(chan struct{}, maxConns),
		URL: "http://colibri:" + token + "@" + p.Addr().String()}
	p.mu.Lock()
	p.grants[g.key] = g
	p.mu.Unlock()
	return g
}

// Port is the proxy's port, which the server's sandbox lets it connect to.
func (g *Grant) Port() int { return int(g.p.Addr().Port()) }

// Revoke ends the grant: its credential is refused from then on.
func (g *Grant) Revoke() {
	g.p.mu.Lock()
	delete(g.p.grants, g.key)
	g.p.mu.Unlock()
}

// grant is the grant whose credential r carries, or nil.
func (p *Proxy) grant(r *http.Request) *Grant {
	auth := r.Header.Get("Proxy-Authorization")
	enc, ok := strings.CutPrefix(auth, "Basic ")
	if !ok {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return nil
	}
	_, token, _ := strings.Cut(string(raw), ":")
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.grants[sha256.Sum256([]byte(token))]
}

// refusal is a request the proxy does not carry: its status and why.
type refusal struct {
	status int
	why    string
}

func (e *refusal) Error() string { return e.why }

func (p *Proxy) refuse(w http.ResponseWriter, g *Grant, where string, r *refusal) {
	server := ""
	if g != nil {
		server = g.Server
		if p.opts.Refused != nil {
			p.opts.Refused(server)
		}
	}
	if len(where) > 300 {
		where = where[:300] + "…"
	}
	if log, missed := p.logRefusal(server); log {
		if missed > 0 {
			p.opts.Logger.Warn("egress refused", "server", server, "destination", where, "why", r.why, "not_logged_before", missed)
		} else {
			p.opts.Logger.Warn("egress refused", "server", server, "destination", where, "why", r.why)
		}
	}
	if r.status == http.StatusProxyAuthRequired {
		w.Header().Set("Proxy-Authenticate", `Basic realm="colibri egress"`)
	}
	http.Error(w, "colibri egress: "+where+": "+r.why, r.status)
}

// logRefusal reports whether a refusal for server is logged (at most
// RefusalLogs in 10 s: a server refused in a loop does not flood colibri's
// log), and how many were left out before it.
func (p *Proxy) logRefusal(server string) (bool, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lw := p.logged[server]
	now := time.Now()
	if lw == nil || now.Sub(lw.start) >= 10*time.Second {
		missed := 0
		if lw != nil {
			missed = lw.missed
		}
		if len(p.logged) > 4096 { // servers come and go: forget the old windows
			clear(p.logged)
		}
		p.logged[server] = &logWindow{start: now, logged: 1}
		return true, missed
	}
	if lw.logged >= p.opts.RefusalLogs {
		lw.missed++
		return false, 0
	}
	lw.logged++
	return true, 0
}

// ServeHTTP carries a CONNECT or a plain HTTP request of a granted server.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g := p.grant(r)
	where := r.Host
	if r.Method != http.MethodConnect && r.URL.IsAbs() {
		where = r.URL.Host
	}
	if g == nil {
		// Closed after the answer: a connection that asks without a
		// credential does not stay, idle, in colibri.
		w.Header().Set("Connection", "close")
		p.refuse(w, nil, where, &refusal{http.StatusProxyAuthRequired, "no credential of a sandboxed server, or one no longer granted"})
		return
	}
	// The slot is the connection's, held while it is open (a keep-alive
	// connection's idle time included), not the request's: a server holds
	// at most max_connections connections to the proxy.
	c, _ := r.Context().Value(connKey{}).(*conn)
	if c == nil {
		p.refuse(w, g, where, &refusal{http.StatusInternalServerError, "a request on a connection the proxy did not accept"})
		return
	}
	if ref := p.attach(c, g); ref != nil {
		w.Header().Set("Connection", "close")
		p.refuse(w, g, where, ref)
		return
	}
	if r.Method == http.MethodConnect {
		p.connect(w, r, g)
		return
	}
	p.forward(w, r, g)
}

// connect carries a CONNECT: a tunnel to the checked address.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request, g *Grant) {
	host, port, err := splitHostPort(r.Host)
	if err != nil {
		p.refuse(w, g, r.Host, &refusal{http.StatusBadRequest, err.Error()})
		return
	}
	up, err := p.dial(r.Context(), g, host, port)
	if err != nil {
		var ref *refusal
		if errors.As(err, &ref) {
			p.refuse(w, g, r.Host, ref)
		} else {
			p.refuse(w, g, r.Host, &refusal{http.StatusBadGateway, err.Error()})
		}
		return
	}
	defer up.Close()
	hj, ok := w.(http.Hijacker)
	if !ok {
		p.refuse(w, g, r.Host, &refusal{http.StatusInternalServerError, "the connection cannot be taken over"})
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer down.Close() // releases the server's slot
	if c, ok := down.(*conn); ok {
		down = c.Conn // copied without the wrapper: splice(2) where the kernel can
	}
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		// What the client sent after its CONNECT, already read.
		if n := buf.Reader.Buffered(); n > 0 {
			b, _ := buf.Reader.Peek(n)
			up.Write(b)
		}
		io.Copy(up, down)
		closeWrite(up)
		done <- struct{}{}
	}()
	go func() {
		io.Copy(down, up)
		closeWrite(down)
		done <- struct{}{}
	}()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// hopHeaders are not forwarded (RFC 9110 section 7.6.1), and neither is
// the server's credential.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forward carries a plain HTTP request: to the request URI's host, which a
// differing Host header may not redirect.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, g *Grant) {
	if !r.URL.IsAbs() || r.URL.Scheme != "http" {
		p.refuse(w, g, r.Host, &refusal{http.StatusBadRequest, "a plain request to a proxy names an absolute http:// URI (use CONNECT for https)"})
		return
	}
	where := r.URL.Host
	if h := r.Header.Get("Host"); h != "" && !strings.EqualFold(h, r.URL.Host) {
		p.refuse(w, g, where, &refusal{http.StatusForbidden, fmt.Sprintf("the Host header %q differs from the request's host", h)})
		return
	}
	hostport := where
	if r.URL.Port() == "" {
		hostport = net.JoinHostPort(r.URL.Hostname(), "80")
	}
	host, port, err := splitHostPort(hostport)
	if err != nil {
		p.refuse(w, g, where, &refusal{http.StatusBadRequest, err.Error()})
		return
	}
	conn, err := p.dial(r.Context(), g, host, port)
	if err != nil {
		var ref *refusal
		if !errors.As(err, &ref) {
			ref = &refusal{http.StatusBadGateway, err.Error()}
		}
		p.refuse(w, g, where, ref)
		return
	}
	defer conn.Close()
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Host = r.URL.Host
	for _, h := range strings.Split(r.Header.Get("Connection"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			out.Header.Del(h)
		}
	}
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	out.Header.Del("Host")
	used := false
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(context.Context, string, string) (net.Conn, error) {
		if used {
			return nil, errors.New("one connection a request")
		}
		used = true
		return conn, nil
	}}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(out)
	if err != nil {
		p.refuse(w, g, where, &refusal{http.StatusBadGateway, err.Error()})
		return
	}
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	// A large buffer, not the ResponseWriter's own 32 KiB copy: a plain
	// HTTP body crosses the proxy in fewer, larger reads and writes
	// (docs/benchmarks.md, "Egress proxy"); at most max_connections of
	// them are in use per server.
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	io.CopyBuffer(writerOnly{w}, resp.Body, *buf)
}

// copyBufs are plain HTTP forwarding's buffers.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// writerOnly hides a writer's ReadFrom, so that io.CopyBuffer uses the
// buffer it is given.
type writerOnly struct{ io.Writer }

// splitHostPort reads HOST:PORT, the host normalized (a name) or bare (an
// address).
func splitHostPort(hostport string) (string, int, error) {
	h, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, fmt.Errorf("not host:port: %q", hostport)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("not a port: %q", ps)
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return h, port, nil
	}
	n, err := dest.NormalizeName(h)
	if err != nil {
		return "", 0, fmt.Errorf("not a host name: %q", h)
	}
	return n, port, nil
}

// dial checks host:port against g's destinations and connects to the
// address it checked: a literal only where listed, a name only where
// listed and only to an address it resolves to that is not special (or is
// listed as a literal). A refusal is a *refusal.
func (p *Proxy) dial(ctx context.Context, g *Grant, host string, port int) (net.Conn, error) {
	listedAddr := func(a netip.Addr) bool {
		for _, d := range g.dests {
			if d.MatchesAddr(a, port) {
				return true
			}
		}
		return false
	}
	var target netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" || !listedAddr(a) {
			return nil, &refusal{http.StatusForbidden, "not a granted destination"}
		}
		target = a
	} else {
		listed := false
		for _, d := range g.dests {
			listed = listed || d.MatchesName(host, port)
		}
		if !listed {
			return nil, &refusal{http.StatusForbidden, "not a granted destination"}
		}
		ctx, cancel := context.WithTimeout(ctx, p.opts.DialTimeout)
		addrs, err := p.opts.Resolve(ctx, host)
		cancel()
		if err != nil {
			return nil, &refusal{http.StatusBadGateway, "resolving it: " + err.Error()}
		}
		for _, a := range addrs {
			if a.Zone() == "" && (!dest.IsSpecial(a) || listedAddr(a)) {
				target = a
				break
			}
		}
		if !target.IsValid() {
			return nil, &refusal{http.StatusForbidden, "it resolves to a loopback, private or other special address only, which is not listed as a literal"}
		}
	}
	addr := netip.AddrPortFrom(target.Unmap(), uint16(port)).String()
	var conn net.Conn
	var err error
	if p.opts.Upstream != nil {
		conn, err = p.viaUpstream(ctx, net.JoinHostPort(host, strconv.Itoa(port)))
	} else {
		conn, err = p.opts.Dial(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	if p.opts.Connected != nil {
		p.opts.Connected(g.Server)
	}
	return conn, nil
}

// viaUpstream opens a tunnel to hostport through the operator's proxy.
func (p *Proxy) viaUpstream(ctx context.Context, hostport string) (net.Conn, error) {
	u := p.opts.Upstream
	proxyAddr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		proxyAddr = net.JoinHostPort(u.Hostname(), port)
	}
	conn, err := p.opts.Dial(ctx, "tcp", proxyAddr)
	if err != nil {
		return nil, fmt.Errorf("the operator's proxy: %w", err)
	}
	if u.Scheme == "https" {
		tc := tls.Client(conn, &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("the operator's proxy: %w", err)
		}
		conn = tc
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: hostport}, Host: hostport, Header: http.Header{}}
	if u.User != nil {
		pw, _ := u.User.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw)))
	}
	conn.SetDeadline(time.Now().Add(p.opts.DialTimeout))
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the operator's proxy: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("the operator's proxy: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		conn.Close()
		return nil, fmt.Errorf("the operator's proxy answered %s", resp.Status)
	}
	conn.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		conn.Close()
		return nil, errors.New("the operator's proxy sent bytes before the tunnel opened")
	}
	return conn, nil
}
