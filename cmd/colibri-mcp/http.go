package main

import (
	"bufio"
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/tools"
)

// shutdownWait bounds how long calls in flight may run after SIGTERM.
const shutdownWait = 10 * time.Second

// maxRequestBody bounds one HTTP request to /mcp: a little above the largest
// hosted result, so that arguments as large as results pass.
func maxRequestBody(s *settings) int64 { return s.maxResultBytes + 1<<20 }

// serveHTTP serves Streamable HTTP at http://ADDR/mcp and GET /healthz until
// ctx ends, then stops accepting and lets calls in flight finish (bounded).
func serveHTTP(ctx context.Context, s *settings, svc *tools.Service) error {
	host, port, err := net.SplitHostPort(s.httpAddr)
	if err != nil {
		return usage(fmt.Errorf("--http / COLIBRI_MCP_HTTP: %q: want HOST:PORT: %w", s.httpAddr, err))
	}
	tokens := &tokenSet{}
	if s.tokenFile != "" {
		if err := tokens.load(s.tokenFile); err != nil {
			return usage(fmt.Errorf("--token-file / COLIBRI_MCP_TOKEN_FILE: %w", err))
		}
	} else if !isLoopback(host) {
		return usage(fmt.Errorf("refusing to serve %s without a token file: anyone who can reach that address could run hosted servers; "+
			"give --token-file (COLIBRI_MCP_TOKEN_FILE) or listen on a loopback address such as 127.0.0.1:%s", s.httpAddr, port))
	}
	ln, err := net.Listen("tcp", s.httpAddr)
	if err != nil {
		return usage(fmt.Errorf("--http / COLIBRI_MCP_HTTP: %w", err))
	}

	server := svc.NewServer(version)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		Logger:              s.logger,
		MaxRequestBodyBytes: maxRequestBody(s),
		// The caller going away cancels the hosted call and ends its process.
		PropagateRequestCancellation: true,
	})
	var handler http.Handler = mcpHandler
	if s.tokenFile != "" {
		handler = auth.RequireBearerToken(tokens.verify, nil)(handler)
		stopHUP := reloadOnHUP(tokens, s)
		defer stopHUP()
	}
	_, boundPort, _ := net.SplitHostPort(ln.Addr().String()) // the real port, when ADDR asked for :0
	handler = sameHost(host, boundPort)(handler)
	calls := &inflight{}
	handler = calls.track(handler)

	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "ok")
	})
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// Requests outlive the signal that stops the server: calls in flight
		// finish (bounded by shutdownWait) rather than being cancelled.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	s.logger.Info("serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp",
		"version", version, "registry", s.configPath, "external_call", s.externalCall, "tokens", s.tokenFile != "")

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return failed(fmt.Errorf("serving HTTP: %w", err))
	case <-ctx.Done():
	}
	s.logger.Info("shutting down: no new requests; waiting for calls in flight", "bound", shutdownWait)
	go hs.Shutdown(context.Background()) // stop accepting; idle connections close
	if !calls.wait(shutdownWait) {
		s.logger.Warn("calls still in flight at the shutdown bound; cancelling them", "bound", shutdownWait)
	}
	// What remains are idle event streams (GET /mcp) and calls past the
	// bound: closing the connections cancels them, and the hosted servers of
	// cancelled calls are killed.
	hs.Close()
	return nil
}

// inflight counts the POST requests being served: the MCP calls a shutdown
// lets finish. (A Streamable HTTP GET stream never ends by itself, so the
// http.Server's own idea of "active" cannot be waited for.)
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero while someone waits
}

func (f *inflight) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		f.n++
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.n--
			if f.n == 0 && f.idle != nil {
				close(f.idle)
				f.idle = nil
			}
			f.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// wait waits until no POST is in flight, at most d; it reports whether that
// happened.
func (f *inflight) wait(d time.Duration) bool {
	f.mu.Lock()
	if f.n == 0 {
		f.mu.Unlock()
		return true
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameHost refuses requests whose Host, or Origin when there is one, does
// not name the served address: a page on another site that resolves its own
// name to this address (DNS rebinding) is turned away with 403.
func sameHost(listenHost, port string) func(http.Handler) http.Handler {
	anyHost := listenHost == "" || net.ParseIP(listenHost) != nil && net.ParseIP(listenHost).IsUnspecified()
	ok := func(hostport string) bool {
		h, p, err := net.SplitHostPort(hostport)
		if err != nil {
			h, p = hostport, "80"
		}
		if p != port {
			return false
		}
		h = strings.Trim(h, "[]")
		switch {
		case anyHost:
			return true
		case isLoopback(listenHost):
			return isLoopback(h)
		}
		return strings.EqualFold(h, listenHost)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !ok(r.Host) {
				http.Error(w, "forbidden: Host does not match the served address", http.StatusForbidden)
				return
			}
			if origin := r.Header.Get("Origin"); origin != "" {
				if !ok(originHostPort(origin)) {
					http.Error(w, "forbidden: Origin does not match the served address", http.StatusForbidden)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// originHostPort is the host:port an Origin header names, with the scheme's
// default port when it has none; "" when it cannot be parsed.
func originHostPort(origin string) string {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return ""
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// tokenSet is the bearer tokens of the token file, replaced whole on reload.
type tokenSet struct {
	tokens atomic.Pointer[[][]byte]
}

// load reads one token per line; blank lines and lines starting with # are
// skipped. A file with no token is an error: it would lock everyone out.
func (t *tokenSet) load(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var toks [][]byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		toks = append(toks, []byte(line))
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if len(toks) == 0 {
		return fmt.Errorf("%s holds no token", path)
	}
	t.tokens.Store(&toks)
	return nil
}

// verify accepts a token that equals a line of the file, comparing every line
// in constant time so that timing tells nothing of the tokens.
func (t *tokenSet) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	toks := t.tokens.Load()
	if toks == nil {
		return nil, auth.ErrInvalidToken
	}
	match := 0
	for _, want := range *toks {
		match |= subtle.ConstantTimeCompare([]byte(token), want)
	}
	if match != 1 {
		return nil, fmt.Errorf("%w: no such token", auth.ErrInvalidToken)
	}
	// Tokens from the file do not expire; the middleware wants a time.
	return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
}

// reloadOnHUP re-reads the token file on SIGHUP. A file that fails to read
// keeps the tokens in force, and says so.
func reloadOnHUP(tokens *tokenSet, s *settings) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				if err := tokens.load(s.tokenFile); err != nil {
					s.logger.Error("SIGHUP: token file not reloaded; the previous tokens stay in force", "err", err)
				} else {
					s.logger.Info("SIGHUP: token file reloaded", "path", s.tokenFile)
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
