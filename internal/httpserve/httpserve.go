// Package httpserve is colibri's HTTP face: the MCP server over Streamable
// HTTP at /mcp and over the 2024-11-05 HTTP+SSE transport at /sse, plus
// GET /healthz, for anything that can reach the port.
//
// It holds what stands between such a caller and the MCP server: bearer
// tokens and the principals they name, the Host/Origin guard against DNS
// rebinding, a deadline on every request body and on every write of a
// response, idle connections closed, sessions that expire, belong to the
// principal that opened them and are capped per principal, refusals logged
// (never a token), and a bounded drain on shutdown. The MCP protocol itself
// is go-sdk's.
//
//	srv, err := httpserve.New(httpserve.Options{Addr: "127.0.0.1:8750", Server: mcpServer, Logger: log})
//	if err != nil { … }        // a setup the operator must fix
//	err = srv.Serve(ctx)       // until ctx ends, then drains
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/instance"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
)

// Defaults of the bounds that have no flag (docs/security.md lists them).
const (
	DefaultReadHeaderTimeout       = 10 * time.Second
	DefaultMaxHeaderBytes          = 64 << 10
	DefaultBodyTimeout             = 60 * time.Second
	DefaultWriteTimeout            = 60 * time.Second
	DefaultIdleTimeout             = 120 * time.Second
	DefaultShutdownTimeout         = 10 * time.Second
	DefaultMaxSessionsPerPrincipal = 64
)

// AnonymousPrincipal is the caller's principal over HTTP without a token
// file (which only a loopback address allows).
const AnonymousPrincipal = "anonymous"

// Options configure a Server. Zero durations and counts take the defaults.
type Options struct {
	// Addr is HOST:PORT to listen on; PORT 0 picks a free port.
	Addr string
	// Server is the MCP server every session is served by.
	Server *mcp.Server
	// TokenFile, when set, is the bearer tokens (see tokens.go for the
	// format); without it Addr must be a loopback address.
	TokenFile string
	// Logger receives refusals at warn and the service's life at info. Nil
	// discards.
	Logger *slog.Logger

	// MaxBodyBytes bounds one request body (413 beyond). Zero: go-sdk's
	// default, 4 MiB.
	MaxBodyBytes int64
	// SessionTimeout closes a session unused this long. Zero: never.
	SessionTimeout time.Duration
	// MaxSessionsPerPrincipal caps the sessions one principal holds open at
	// once, Streamable HTTP and SSE together (429 beyond).
	MaxSessionsPerPrincipal int

	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (431 beyond): they are read
	// before anything is known of the caller. (net/http's default is 1 MiB,
	// for every connection anyone opens.)
	MaxHeaderBytes int
	// BodyTimeout bounds reading a request's body, from the end of its
	// headers. (Not http.Server.ReadTimeout, whose expiry would also cancel a
	// response still streaming.)
	BodyTimeout time.Duration
	// WriteTimeout bounds each write of a response: a caller that stops
	// reading is cut off this long after the write that blocked. (Not
	// http.Server.WriteTimeout, which would cut a long call's stream.)
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection with no request this long.
	IdleTimeout time.Duration
	// ShutdownTimeout bounds how long calls in flight may finish once ctx ends.
	ShutdownTimeout time.Duration

	// AllowedHosts are names a request's Host or Origin may give besides
	// the served address, with any port (--allowed-host: a load balancer's
	// or proxy's public name).
	AllowedHosts []string

	// Ready, when set, answers GET /readyz: ok, or the reason it is not
	// (200 "ready" or 503 with the reason). Without it /readyz is ready.
	Ready func() (ok bool, reason string)
	// OnRefused, when set, counts each request refused before it reached MCP,
	// by reason: "401", "403", "413" or "session_cap".
	OnRefused func(reason string)

	// Bulk, when set, is the table the Streamable HTTP face lifts a call's
	// large strings into, and every response is lowered through (bulk.go).
	// The tools and the host must share it.
	Bulk *bulk.Table

	// Sealer seals the SSE event ids this instance hands out and opens the
	// Last-Event-ID a caller resumes with (docs/scaling.md): the tools'
	// Sealer, one per run. Nil: one of its own.
	Sealer *instance.Sealer
}

// Server is colibri's HTTP face, listening from New on.
type Server struct {
	opts     Options
	log      *slog.Logger
	ln       net.Listener
	tokens   *tokenSet // nil without a token file
	hs       *http.Server
	calls    inflight // POST requests
	sessions *sessions
	refused  refusals // the warnings about refused requests, rate-limited
}

// New checks the options, reads the token file and listens. Every error it
// returns is a setup the operator must change (the command line's exit 2).
func New(opts Options) (*Server, error) {
	if opts.Server == nil {
		return nil, errors.New("httpserve: no MCP server")
	}
	setDefaults(&opts)
	host, port, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("--http / COLIBRI_MCP_HTTP: %q: want HOST:PORT: %w", opts.Addr, err)
	}
	s := &Server{opts: opts, log: opts.Logger}
	if opts.TokenFile != "" {
		s.tokens = &tokenSet{}
		if err := s.tokens.load(opts.TokenFile); err != nil {
			return nil, fmt.Errorf("--token-file / COLIBRI_MCP_TOKEN_FILE: %w", err)
		}
	} else if !isLoopback(host) {
		return nil, fmt.Errorf("refusing to serve %s without a token file: anyone who can reach that address could run hosted servers; "+
			"give --token-file (COLIBRI_MCP_TOKEN_FILE) or listen on a loopback address such as 127.0.0.1:%s", opts.Addr, port)
	}
	if s.ln, err = net.Listen("tcp", opts.Addr); err != nil {
		return nil, fmt.Errorf("--http / COLIBRI_MCP_HTTP: %w", err)
	}
	_, boundPort, _ := net.SplitHostPort(s.ln.Addr().String()) // the real port, when Addr asked for :0
	s.sessions = newSessions(opts.Server, opts.MaxSessionsPerPrincipal)
	s.hs = &http.Server{
		Handler:           s.handler(host, boundPort),
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		MaxHeaderBytes:    opts.MaxHeaderBytes,
		IdleTimeout:       opts.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	return s, nil
}

func setDefaults(o *Options) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Sealer == nil {
		o.Sealer = instance.New("colibri")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&o.BodyTimeout, DefaultBodyTimeout)
	def(&o.WriteTimeout, DefaultWriteTimeout)
	def(&o.IdleTimeout, DefaultIdleTimeout)
	def(&o.ShutdownTimeout, DefaultShutdownTimeout)
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.MaxSessionsPerPrincipal <= 0 {
		o.MaxSessionsPerPrincipal = DefaultMaxSessionsPerPrincipal
	}
}

// URL is the Streamable HTTP endpoint, with the port actually bound.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/mcp" }

// ReloadTokens reads the token file again. A file that fails to read leaves
// the tokens in force and says why.
func (s *Server) ReloadTokens() error {
	if s.tokens == nil {
		return errors.New("no token file to reload")
	}
	return s.tokens.load(s.opts.TokenFile)
}

// Serve serves until ctx ends, then stops accepting, lets calls in flight
// finish (bounded by ShutdownTimeout) and closes what remains. It returns nil
// after such a shutdown, or the error that stopped the listener.
func (s *Server) Serve(ctx context.Context) error {
	// Requests outlive the signal that stops the server: calls in flight
	// finish (bounded) rather than being cancelled.
	s.hs.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	s.log.Info("serving MCP over Streamable HTTP", "url", s.URL(), "sse", "http://"+s.ln.Addr().String()+"/sse",
		"tokens", s.tokens != nil, "session_timeout", s.opts.SessionTimeout, "max_sessions_per_principal", s.opts.MaxSessionsPerPrincipal)
	errc := make(chan error, 1)
	go func() { errc <- s.hs.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	bound := s.opts.ShutdownTimeout
	s.log.Info("shutting down: no new requests; waiting for calls in flight", "bound", bound)
	go s.hs.Shutdown(context.Background()) // stop accepting; idle connections close
	deadline := time.Now().Add(bound)
	// A Streamable HTTP call is answered on its POST; an SSE call's POST is
	// answered 202 at once, and its result travels on the session's stream.
	if !s.calls.wait(deadline) || !s.sessions.sseCalls.wait(deadline) {
		s.log.Warn("calls still in flight at the shutdown bound; cancelling them", "bound", bound)
	}
	// What remains are event streams (GET /mcp, GET /sse) and calls past the
	// bound: closing the connections cancels them, and the hosted servers of
	// cancelled calls are killed.
	s.hs.Close()
	s.sessions.closeAll()
	return nil
}

// handler is the whole face: /healthz, and /mcp and /sse behind the checks,
// cheapest first, all before a body is read.
func (s *Server) handler(listenHost, port string) http.Handler {
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.opts.Server }, &mcp.StreamableHTTPOptions{
		Logger:              s.log,
		MaxRequestBodyBytes: s.opts.MaxBodyBytes,
		SessionTimeout:      s.opts.SessionTimeout,
		// The guard below does this, case-insensitively (go-sdk's refuses
		// "LOCALHOST").
		DisableLocalhostProtection: true,
		// Under protocol 2026-07-28, the caller going away cancels its call.
		// (go-sdk applies it only to stateless servers; colibri's sessions
		// speak the versions before it, where MCP says a disconnection
		// SHOULD NOT be taken for a cancellation: a call is cancelled by
		// notifications/cancelled, and one whose caller left runs on.)
		PropagateRequestCancellation: true,
		EventStore:                   newEventStore(s.opts.Bulk), // resumable streams (resume.go)
	})
	// 2026-07-28 and later (modern.go): the same server, without sessions.
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.opts.Server }, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		Logger:                       s.log,
		MaxRequestBodyBytes:          s.opts.MaxBodyBytes,
		DisableLocalhostProtection:   true,
		PropagateRequestCancellation: true, // 2026-07-28: a caller that goes away cancels its call
	})
	sse := &sseHandler{server: s.opts.Server, maxBody: s.opts.MaxBodyBytes, timeout: s.opts.SessionTimeout, sessions: s.sessions, log: s.log,
		instance: s.opts.Sealer.Name()}

	guard := sameHost(listenHost, port, s.opts.AllowedHosts, false)
	probe := sameHost(listenHost, port, s.opts.AllowedHosts, true)
	wrap := func(h http.Handler) http.Handler {
		if s.tokens != nil {
			// go-sdk's middleware puts the TokenInfo where its transports
			// look: a session remembers its opener's UserID and answers 403
			// to anyone else.
			h = auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
				return &auth.TokenInfo{UserID: reqctx.Principal(ctx)}, nil
			}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
		}
		h = s.bodyDeadline(h)
		h = s.authenticate(h)
		h = guard(h)
		h = s.observe(h)
		return s.calls.track(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", wrap(byVersion(
		s.sessions.capRequests(s.lowerResponses(s.liftPOST(stateless))),
		s.sessions.capStreamable(withRetry(s.lowerResponses(s.liftPOST(s.sealEvents(streamable))))))))
	mux.Handle("/sse", wrap(s.lowerResponses(sse)))
	// The probes keep to the Host rule too (a rebinding page could read
	// the registry's error from /readyz), and also answer a request with
	// no Host or an IP-literal one: health checks dial an address.
	mux.Handle("GET /healthz", probe(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "ok")
	})))
	mux.Handle("GET /readyz", probe(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if s.opts.Ready != nil {
			if ok, reason := s.opts.Ready(); !ok {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintln(w, reason)
				return
			}
		}
		fmt.Fprint(w, "ready")
	})))
	return mux
}

// authenticate finds the caller's principal: from the bearer token when there
// is a token file, else AnonymousPrincipal. An unknown or missing token is
// refused before the body is read.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := AnonymousPrincipal
		if s.tokens != nil {
			if who = principalOfBearer(s.tokens, w, r); who == "" {
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(reqctx.WithPrincipal(r.Context(), who)))
	})
}

// principalOfBearer is the principal of r's bearer token. When there is none, or it is
// unknown, it answers 401 and returns "".
func principalOfBearer(tokens *tokenSet, w http.ResponseWriter, r *http.Request) string {
	// As go-sdk's auth.RequireBearerToken reads the header.
	fields := strings.Fields(r.Header.Get("Authorization"))
	if len(fields) != 2 || !strings.EqualFold(fields[0], "bearer") {
		w.Header().Set("WWW-Authenticate", `Bearer realm="colibri-mcp"`)
		refuse(w, http.StatusUnauthorized, "no bearer token")
		return ""
	}
	who := tokens.principal(fields[1])
	if who == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="colibri-mcp", error="invalid_token"`)
		refuse(w, http.StatusUnauthorized, "unknown bearer token")
	}
	return who
}

// refuse answers a request that is turned away. The connection closes after
// the answer, so that a body the caller announced is never waited for.
func refuse(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Connection", "close")
	http.Error(w, reason, code)
}

// bodyDeadline gives a request's body BodyTimeout to arrive, then lifts the
// deadline once it has: a read deadline that fires later would cancel the
// response still streaming (net/http's background read treats it as the
// caller gone).
func (s *Server) bodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout)); err != nil {
			s.log.Debug("setting a body deadline", "err", err)
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		next.ServeHTTP(w, r)
	})
}

type deadlineBody struct {
	io.ReadCloser
	once sync.Once
	lift func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		// The body is whole. (After any other error the deadline stays:
		// net/http reads what is left of a body before it lets the
		// connection go, and that must not wait for a trickle.)
		b.once.Do(b.lift)
	}
	return n, err
}

// observe arms a write deadline before every write of the response and logs
// the requests that were refused (401, 403, 413, 429) at warn, with the
// remote address and the reason, never the token.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &responseWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: s.opts.WriteTimeout}
		next.ServeHTTP(rw, r)
		rw.arm() // for the end of the response, written after the handler
		if rw.status >= 400 {
			// After a refusal net/http would read what is left of the body
			// (up to 256 KiB) before closing the connection: a caller that
			// announced a body and sends none would hold it open.
			_ = rw.rc.SetReadDeadline(time.Now())
		}
		switch rw.status {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
			if s.opts.OnRefused != nil {
				reason := strconv.Itoa(rw.status)
				if rw.status == http.StatusTooManyRequests {
					reason = "session_cap"
				}
				s.opts.OnRefused(reason)
			}
			ok, unlogged := s.refused.allow(time.Now())
			if !ok {
				break
			}
			attrs := []any{"status", rw.status, "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path,
				"reason", strings.TrimSpace(string(rw.reason))}
			if p := reqctx.Principal(r.Context()); p != "" {
				attrs = append(attrs, "principal", p)
			}
			if unlogged > 0 {
				attrs = append(attrs, "refusals_not_logged", unlogged)
			}
			s.log.Warn("HTTP request refused", attrs...)
		}
	})
}

// refusals rate-limits the warnings about refused requests: anyone who can
// reach the port can have one written, and a flood of them must not fill the
// log. Up to refusalBurst are written at once, then refusalRate a second;
// the rest are counted, and the count goes with the next warning written.
type refusals struct {
	mu       sync.Mutex
	tokens   float64
	last     time.Time
	unlogged int
}

const (
	refusalBurst = 50
	refusalRate  = 10 // a second, once the burst is spent
)

// allow says whether the refusal at now is logged, and how many were not
// since the last one that was.
func (r *refusals) allow(now time.Time) (ok bool, unlogged int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last.IsZero() {
		r.tokens = refusalBurst
	} else {
		r.tokens = min(refusalBurst, r.tokens+now.Sub(r.last).Seconds()*refusalRate)
	}
	r.last = now
	if r.tokens < 1 {
		r.unlogged++
		return false, 0
	}
	r.tokens--
	unlogged, r.unlogged = r.unlogged, 0
	return true, unlogged
}

// responseWriter arms the connection's write deadline before each write and
// flush, and keeps the status and the start of an error body for the log.
type responseWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	status  int
	reason  []byte
	onWrite func() // activity, for SSE sessions' idle timer
}

func (w *responseWriter) arm() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
}

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		if code >= 400 {
			// Never wait for the rest of a body that is refused.
			w.Header().Set("Connection", "close")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.status >= 400 && len(w.reason) < 200 {
		w.reason = append(w.reason, p[:min(len(p), 200-len(w.reason))]...)
	}
	if w.onWrite != nil {
		w.onWrite()
	}
	w.arm()
	return w.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController.Flush calls (go-sdk flushes
// each event through one).
func (w *responseWriter) FlushError() error {
	w.arm()
	return w.rc.Flush()
}

func (w *responseWriter) Flush() { _ = w.FlushError() }

func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observed is observe's responseWriter below w, which other writers (the
// bulk table's lowering) may wrap, or nil.
func observed(w http.ResponseWriter) *responseWriter {
	for {
		switch v := w.(type) {
		case *responseWriter:
			return v
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return nil
		}
	}
}
