package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// MetricsOptions configure the metrics listener (--metrics-addr).
type MetricsOptions struct {
	// Addr is HOST:PORT; PORT 0 picks a free port.
	Addr string
	// Handler serves GET /metrics.
	Handler http.Handler
	// TokenFile, when set, is the same bearer tokens as /mcp; without it
	// Addr must be a loopback address.
	TokenFile string
	// Logger receives refusals at warn; nil discards.
	Logger *slog.Logger
	// AllowedHosts are the names a scrape's Host may give besides the
	// served address, as for /mcp (Options.AllowedHosts).
	AllowedHosts []string
}

// MetricsServer serves GET /metrics, listening from NewMetrics on.
type MetricsServer struct {
	opts   MetricsOptions
	log    *slog.Logger
	ln     net.Listener
	tokens *tokenSet
	hs     *http.Server
}

// NewMetrics checks the options, reads the token file and listens. Every
// error is a setup the operator must change (exit 2): in particular an
// address beyond loopback without a token file, since the metrics name the
// registry's servers and tools and show the traffic.
func NewMetrics(opts MetricsOptions) (*MetricsServer, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	host, port, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr / COLIBRI_MCP_METRICS_ADDR: %q: want HOST:PORT: %w", opts.Addr, err)
	}
	m := &MetricsServer{opts: opts, log: opts.Logger}
	if opts.TokenFile != "" {
		m.tokens = &tokenSet{}
		if err := m.tokens.load(opts.TokenFile); err != nil {
			return nil, fmt.Errorf("--token-file / COLIBRI_MCP_TOKEN_FILE: %w", err)
		}
	} else if !isLoopback(host) {
		return nil, fmt.Errorf("refusing to serve metrics on %s without a token file: they name the registry's servers and tools and show their traffic; "+
			"give --token-file (COLIBRI_MCP_TOKEN_FILE), whose bearer tokens a scraper then sends, or listen on a loopback address such as 127.0.0.1:%s", opts.Addr, port)
	}
	if m.ln, err = net.Listen("tcp", opts.Addr); err != nil {
		return nil, fmt.Errorf("--metrics-addr / COLIBRI_MCP_METRICS_ADDR: %w", err)
	}
	_, boundPort, _ := net.SplitHostPort(m.ln.Addr().String())
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.authorize(opts.Handler))
	m.hs = &http.Server{
		Handler:           sameHost(host, boundPort, opts.AllowedHosts, true)(mux),
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       DefaultBodyTimeout,
		WriteTimeout:      DefaultWriteTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		ErrorLog:          slog.NewLogLogger(m.log.Handler(), slog.LevelDebug),
	}
	return m, nil
}

// URL is the metrics endpoint, with the port actually bound.
func (m *MetricsServer) URL() string { return "http://" + m.ln.Addr().String() + "/metrics" }

// ReloadTokens reads the token file again (SIGHUP); a file that fails to
// read leaves the tokens in force.
func (m *MetricsServer) ReloadTokens() error {
	if m.tokens == nil {
		return errors.New("no token file to reload")
	}
	return m.tokens.load(m.opts.TokenFile)
}

// Serve serves until ctx ends.
func (m *MetricsServer) Serve(ctx context.Context) error {
	m.log.Info("serving metrics", "url", m.URL(), "tokens", m.tokens != nil)
	errc := make(chan error, 1)
	go func() { errc <- m.hs.Serve(m.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving metrics: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if m.hs.Shutdown(sctx) != nil {
		m.hs.Close()
	}
	return nil
}

// authorize lets a scrape through with a known bearer token (when there
// is a token file), and logs a refusal with the remote address and the
// reason, never the token.
func (m *MetricsServer) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.tokens != nil {
			rec := &statusRecorder{ResponseWriter: w}
			if principal := principalOfBearer(m.tokens, rec, r); principal == "" {
				m.log.Warn("metrics request refused", "status", rec.status, "remote", r.RemoteAddr, "reason", strings.TrimSpace(rec.body.String()))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	body   strings.Builder
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	if r.body.Len() < 200 {
		r.body.Write(p[:min(len(p), 200-r.body.Len())])
	}
	return r.ResponseWriter.Write(p)
}
