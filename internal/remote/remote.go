// Package remote reaches a remote MCP server over HTTP, for host: go-sdk's
// Streamable HTTP or SSE client transport (or "auto", the spec's fallback
// from one to the other), with the registry entry's headers and bearer
// token or an OAuth handler, response bodies bounded as they are read, and a
// record of each phase's exchanges (the last HTTP status, whether the request
// was written, Retry-After) from which host tells the contract's kinds and
// retries apart. It relays the server's progress and logs as its event
// streams are read (SetRelay), so that go-sdk's Streamable HTTP connection
// reaches the session unwrapped and opens its standalone GET stream, which
// it bounds (stream.go).
//
//	c := remote.New(remote.Options{URL: "https://example.com/mcp", Bearer: token, MaxBytes: 16 << 20})
//	defer c.Close()
//	ctx, x := remote.Track(ctx)
//	cs, err := client.Connect(ctx, c.Transport(), nil)
//	if err != nil {
//		status, wrote, _ := x.Snapshot() // 401, true, 0
//	}
//
// It never sets http.Client.Timeout (that would cut the event streams): every
// request is bounded by its phase's context.
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/strict"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Options describe one remote server.
type Options struct {
	URL       string
	Transport string            // registry.TransportStreamable (""), TransportSSE or TransportAuto
	Headers   map[string]string // sent with every request, already expanded
	Bearer    string            // "Authorization: Bearer …", already expanded
	// OAuth, when set, authorizes the requests: Streamable HTTP through the
	// SDK's OAuthHandler, SSE by its token source on every request.
	OAuth auth.OAuthHandler
	// MaxBytes bounds one message read from the server: a JSON body, or one
	// event of an event stream (COLIBRI_MCP_MAX_RESULT_BYTES).
	MaxBytes int64
	// Base is the transport requests go through; nil means a fresh clone
	// of http.DefaultTransport (owned, and closed by Close).
	Base http.RoundTripper
	// Timeout is the entry's phase timeout: the answer to the standalone
	// GET of Streamable HTTP is awaited a third of it, at most
	// maxStreamWait (then colibri goes on as if the server had answered
	// 405: it offers no such stream).
	Timeout time.Duration
	// Ended, when set, is told (once) that the server broke the session
	// outside any request: a message past MaxBytes on its standalone GET
	// stream.
	Ended func(why string)
}

// Conn is one remote server as host uses it: the HTTP client every
// transport it makes shares, and what was read through it.
type Conn struct {
	opts     Options
	origin   *url.URL // of opts.URL: where headers and credentials may go
	client   *http.Client
	own      *http.Transport // closed by Close; nil when Base was given
	read     atomic.Int64
	tooLarge atomic.Bool
	version  atomic.Pointer[string] // negotiated: sent as MCP-Protocol-Version
	relay    atomic.Pointer[Relay]
	unclear  atomic.Pointer[strict.Problem] // strict.go

	life    context.Context // ends with Close: so do the standalone streams
	endLife context.CancelFunc
	stream  streamState
}

// SetProtocolVersion is the version initialize negotiated: every later
// request says it in MCP-Protocol-Version, as the transport specification
// requires (go-sdk's Streamable client sets it only when its connection is
// the session's own, and colibri wraps that connection to relay what it
// reads).
func (c *Conn) SetProtocolVersion(v string) { c.version.Store(&v) }

// ErrTooLarge is what reading a body fails with once one message passes
// Options.MaxBytes.
var ErrTooLarge = errors.New("message larger than COLIBRI_MCP_MAX_RESULT_BYTES")

// New returns a Conn for opts. Nothing is sent until a transport connects.
func New(opts Options) *Conn {
	c := &Conn{opts: opts}
	c.life, c.endLife = context.WithCancel(context.Background())
	base := opts.Base
	if base == nil {
		c.own = http.DefaultTransport.(*http.Transport).Clone()
		base = c.own
	}
	c.origin, _ = url.Parse(opts.URL)
	// No Timeout: the phase contexts bound each request, and a client
	// timeout would cut the long-lived event streams.
	c.client = &http.Client{Transport: &roundTripper{c: c, base: base}, CheckRedirect: c.checkRedirect}
	return c
}

// RedirectError is a redirect off the registry's origin, which colibri does
// not follow: the request (and the credentials colibri adds) would go to a
// host the registry does not name. Only the host is kept: the redirect's
// path and query may hold anything.
type RedirectError struct{ Host string }

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the server redirected to %s, another host; colibri does not follow it", e.Host)
}

// checkRedirect follows redirects within the url's origin only (at most 10,
// as Go's default), recording a refused one in the request's Exchange.
func (c *Conn) checkRedirect(req *http.Request, via []*http.Request) error {
	if !c.sameOrigin(req.URL) {
		err := &RedirectError{Host: req.URL.Host}
		if x := exchangeOf(req.Context()); x != nil {
			x.each(func(x *Exchange) { x.err = err })
		}
		return err
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// sameOrigin reports whether u has the scheme and host of the registry's
// url: only such requests carry its headers and credentials.
func (c *Conn) sameOrigin(u *url.URL) bool {
	return c.origin != nil && strings.EqualFold(u.Scheme, c.origin.Scheme) && strings.EqualFold(u.Host, c.origin.Host)
}

// Client is the HTTP client of the connection (for an OAuth handler's own
// requests it is not: those need no colibri headers).
func (c *Conn) Client() *http.Client { return c.client }

// BytesRead is how many body bytes were read from the server so far.
func (c *Conn) BytesRead() int64 { return c.read.Load() }

// TooLarge reports whether a message passed Options.MaxBytes.
func (c *Conn) TooLarge() bool { return c.tooLarge.Load() }

// Close ends the standalone streams and drops the idle connections of the
// Conn's own transport.
func (c *Conn) Close() {
	c.endLife()
	if c.own != nil {
		c.own.CloseIdleConnections()
	}
}

// Transport is the MCP transport of the entry's kind. Each call returns a
// new one (a new session).
func (c *Conn) Transport() mcp.Transport {
	switch c.opts.Transport {
	case registry.TransportSSE:
		return c.sse()
	case registry.TransportAuto:
		return &autoTransport{c: c}
	}
	return streamTransport{c.streamable()}
}

func (c *Conn) streamable() *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{
		Endpoint:     c.opts.URL,
		HTTPClient:   c.client,
		OAuthHandler: c.opts.OAuth,
		// colibri's own bound (limitBody) cuts first, and says so.
		MaxEventSize: -1,
	}
}

func (c *Conn) sse() mcp.Transport {
	return &sseTransport{&mcp.SSEClientTransport{Endpoint: c.opts.URL, HTTPClient: c.client, MaxEventSize: -1}}
}

// sseTransport is the SDK's SSE client transport with a connection that
// outlives the context of its Connect: the SDK opens its event stream (the
// one every answer comes back on) with that context, and colibri's is the
// initialize phase's, over as soon as initialize is. The stream ends with
// the connection instead; Connect itself (the GET and its endpoint event)
// is still bounded by ctx.
type sseTransport struct{ inner *mcp.SSEClientTransport }

func (t *sseTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := t.inner.Connect(cctx)
	if !stop() || err != nil {
		cancel()
		if err == nil {
			conn.Close()
			err = ctx.Err()
		}
		return nil, err
	}
	return &cancelConn{Connection: conn, cancel: cancel}, nil
}

// cancelConn ends its context when it is closed.
type cancelConn struct {
	mcp.Connection
	cancel context.CancelFunc
}

func (c *cancelConn) Close() error {
	defer c.cancel()
	return c.Connection.Close()
}

// An Exchange records what happened to the HTTP requests made under one
// context (one phase of a request): the last status answered, whether the
// last request was written out, the server's Retry-After.
type Exchange struct {
	parent *Exchange

	mu         sync.Mutex
	requests   int
	status     int
	wrote      bool
	retryAfter time.Duration
	err        error // the last request's transport failure (DNS, connect, TLS, reset)
	// The last answer's media type ("" when it had none), and whether it
	// answered a Streamable HTTP POST (one that accepts both JSON and an
	// event stream): only such an answer must be one or the other.
	contentType string
	mcpPost     bool
}

type exchangeKey struct{}

// Track returns ctx with a new Exchange that records the requests made
// under it (and under any Exchange already in ctx).
func Track(ctx context.Context) (context.Context, *Exchange) {
	x := &Exchange{parent: exchangeOf(ctx)}
	return context.WithValue(ctx, exchangeKey{}, x), x
}

func exchangeOf(ctx context.Context) *Exchange {
	x, _ := ctx.Value(exchangeKey{}).(*Exchange)
	return x
}

// Snapshot returns the last status (0: no answer), whether the last request
// was written, and the last Retry-After (0 when none).
func (x *Exchange) Snapshot() (status int, wrote bool, retryAfter time.Duration) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.status, x.wrote, x.retryAfter
}

// NotMCP reports whether the last answer was a success status to a
// Streamable HTTP POST that carried no MCP message: a media type other
// than application/json or text/event-stream (a web page, say), or a bare
// 202. ctype is the media type answered ("" for none); status the status.
// (A 202 is the right answer to a notification: the caller knows whether
// it sent one.)
func (x *Exchange) NotMCP() (ctype string, status int, notMCP bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.mcpPost || x.status < 200 || x.status >= 300 {
		return "", 0, false
	}
	if x.status == http.StatusAccepted && x.contentType == "" {
		return "", x.status, true
	}
	return x.contentType, x.status, x.contentType != "application/json" && x.contentType != "text/event-stream"
}

// Err is the last request's transport failure (no answer at all), or nil.
func (x *Exchange) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

// Requests is how many requests were made under the Exchange.
func (x *Exchange) Requests() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.requests
}

func (x *Exchange) each(f func(*Exchange)) {
	for ; x != nil; x = x.parent {
		x.mu.Lock()
		f(x)
		x.mu.Unlock()
	}
}

// roundTripper adds the entry's headers and credentials to a clone of each
// request (a RoundTripper must not modify its request), records the
// exchange, and bounds the response body.
type roundTripper struct {
	c    *Conn
	base http.RoundTripper
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	standalone := req.Method == http.MethodGet && ctx.Value(standaloneKey{}) != nil
	x := exchangeOf(ctx)
	if x != nil {
		mcpPost := req.Method == http.MethodPost && acceptsMCP(req.Header.Values("Accept"))
		x.each(func(x *Exchange) {
			x.requests++
			x.status, x.wrote, x.retryAfter, x.err = 0, false, 0, nil
			x.contentType, x.mcpPost = "", mcpPost
		})
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) {
				// Even a write that failed part way may have reached the
				// server: only a request never written surely did not.
				x.each(func(x *Exchange) { x.wrote = true })
			},
		})
	}
	r := req.Clone(ctx)
	if !t.c.sameOrigin(r.URL) {
		// An SSE endpoint event naming another host: what the request
		// carries is the SDK's alone.
		return t.send(r, x)
	}
	for k, v := range t.c.opts.Headers {
		r.Header.Set(k, v)
	}
	if t.c.opts.Bearer != "" {
		r.Header.Set("Authorization", "Bearer "+t.c.opts.Bearer)
	}
	switch v := t.c.version.Load(); {
	case r.Header.Get("Mcp-Method") == "initialize":
		// initialize negotiates the version in its body: a header left
		// from the server/discover probe before it (2026-07-28) would make
		// a server before that version refuse it.
		r.Header.Del("MCP-Protocol-Version")
	case v != nil:
		// The negotiated version, also over what go-sdk's connection set:
		// hidden from the session (relayTransport), it may still name the
		// probe's.
		r.Header.Set("MCP-Protocol-Version", *v)
	}
	if t.c.opts.OAuth != nil && r.Header.Get("Authorization") == "" {
		// The SSE transport knows no OAuth handler: its requests get the
		// token here. (The Streamable one sets the header itself.)
		if ts, err := t.c.opts.OAuth.TokenSource(ctx); err != nil {
			return nil, err
		} else if ts != nil {
			tok, err := ts.Token()
			if err != nil {
				return nil, err
			}
			tok.SetAuthHeader(r)
		}
	}
	if standalone {
		return t.standalone(r)
	}
	return t.send(r, x)
}

// send passes r on, recording the answer in x and bounding its body. The
// request ends with the Conn, too: a request go-sdk sends on a context of
// its own (notifications/cancelled, bounded at 5 s) to a server that never
// answers must not hold the Close that waits for it.
func (t *roundTripper) send(r *http.Request, x *Exchange) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(r.Context())
	stopLife := context.AfterFunc(t.c.life, func() { cancel(errClosed) })
	release := func() {
		stopLife()
		cancel(nil)
	}
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	if err != nil {
		release()
		if x != nil {
			x.each(func(x *Exchange) { x.err = err })
		}
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if x != nil {
		ra := retryAfter(resp.Header.Get("Retry-After"), time.Now())
		x.each(func(x *Exchange) { x.status, x.retryAfter, x.contentType = resp.StatusCode, ra, mt })
	}
	if mt == "text/event-stream" {
		// Streamable HTTP's streams (a POST's answer, a resumed one) keep
		// the ids of relayed events; the SSE transport's takes none.
		keep := acceptsMCP(r.Header.Values("Accept")) || r.Header.Get("Last-Event-ID") != ""
		// (And only the SSE transport's stream is answered to an Accept
		// of text/event-stream alone: its client reads every event.)
		resp.Body = &eventBody{c: t.c, rc: resp.Body, relay: t.c.relayFunc(), keepIDs: keep, everyEvent: !keep}
	} else {
		resp.Body = &limitBody{c: t.c, rc: resp.Body}
		if mt == "application/json" {
			resp.Body = &screenedBody{c: t.c, rc: resp.Body} // strict.go
		}
	}
	resp.Body = &releaseBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// acceptsMCP reports whether an Accept header lists both media types a
// Streamable HTTP POST must accept (the SSE transport's POSTs do not: their
// answers come over the event stream, and a 202 is all they get).
func acceptsMCP(values []string) bool {
	var json, events bool
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := mime.ParseMediaType(strings.TrimSpace(part))
			json = json || mt == "application/json"
			events = events || mt == "text/event-stream"
		}
	}
	return json && events
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date
// (RFC 9110 section 10.2.3). Anything else is no delay.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(min(n, 24*60*60)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// limitBody is a JSON response body, counted and bounded as one message
// (an event stream is an eventBody). The moment it passes the bound,
// reading fails with ErrTooLarge and the body is closed: nothing past it is
// buffered.
type limitBody struct {
	c  *Conn
	rc io.ReadCloser
	n  int64 // bytes so far
}

func (b *limitBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.c.read.Add(int64(n))
	b.n += int64(n)
	if max := b.c.opts.MaxBytes; max > 0 && b.n > max {
		b.c.tooLarge.Store(true)
		b.rc.Close()
		return 0, ErrTooLarge
	}
	return n, err
}

func (b *limitBody) Close() error { return b.rc.Close() }

// ExchangeOf returns the innermost Exchange of ctx, or nil.
func ExchangeOf(ctx context.Context) *Exchange { return exchangeOf(ctx) }
