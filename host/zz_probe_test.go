package host_test

import (
	"bytes"
	"compress/gzip"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
)

func TestProbeRedirect(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		http.Error(w, "nope", 404)
	}))
	defer evil.Close()
	red := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, evil.URL+"/steal?x=1", http.StatusTemporaryRedirect)
	}))
	defer red.Close()
	h := newHarness(t, host.Options{Environ: func() []string { return []string{"TOKEN=tok-s3cr3t"} }})
	srv := remoteSrv(red.URL)
	srv.Headers = map[string]string{"X-Api-Key": "${TOKEN}"}
	srv.BearerToken = "${TOKEN}"
	_, err := h.ListTools(t.Context(), srv, nil)
	t.Logf("err: %v", err)
	mu.Lock()
	t.Logf("evil saw: %v", seen)
	mu.Unlock()
}

func TestProbeQueryToken(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	var logs syncbuf.Buffer
	h := newHarness(t, host.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	_, err := h.ListTools(t.Context(), remoteSrv("http://"+addr+"/mcp?token=q-s3cr3t"), nil)
	t.Logf("err: %v", err)
	t.Logf("logs: %s", logs.String())
}

func TestProbeNewlineInVar(t *testing.T) {
	p := newProxy(t)
	h := newHarness(t, host.Options{Environ: func() []string { return []string{"TOKEN=tok\r\nX-Evil: 1"} }})
	srv := remoteSrv(p.srv.URL)
	srv.Headers = map[string]string{"X-Api-Key": "${TOKEN}"}
	_, err := h.ListTools(t.Context(), srv, nil)
	t.Logf("header err: %v", err)
	srv = remoteSrv(p.srv.URL)
	srv.BearerToken = "${TOKEN}"
	_, err = h.ListTools(t.Context(), srv, nil)
	t.Logf("bearer err: %v", err)
}

func TestProbeHTML(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html>hello</html>"))
	}))
	defer s.Close()
	h := newHarness(t, host.Options{})
	start := time.Now()
	_, err := h.ListTools(t.Context(), remoteSrv(s.URL), nil)
	t.Logf("html err (%s): %v", time.Since(start), err)
}

func TestProbe202(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(202)
	}))
	defer s.Close()
	h := newHarness(t, host.Options{Timeout: time.Second})
	start := time.Now()
	_, err := h.ListTools(t.Context(), remoteSrv(s.URL), nil)
	t.Logf("202 err (%s): %v", time.Since(start), err)
}

func TestProbeGzipBomb(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"x":"`))
	zw.Write(bytes.Repeat([]byte("a"), 200<<20))
	zw.Close()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(buf.Bytes())
	}))
	defer s.Close()
	h := newHarness(t, host.Options{MaxResultBytes: 1 << 20})
	start := time.Now()
	_, err := h.ListTools(t.Context(), remoteSrv(s.URL), nil)
	t.Logf("gzip err (%s): %v", time.Since(start), err)
}

func TestProbeEndlessSSE(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for r.Context().Err() == nil {
			if _, err := w.Write([]byte("data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n")); err != nil {
				return
			}
		}
	}))
	defer s.Close()
	h := newHarness(t, host.Options{MaxResultBytes: 1 << 20, Timeout: 2 * time.Second})
	start := time.Now()
	_, err := h.ListTools(t.Context(), remoteSrv(s.URL), nil)
	t.Logf("sse err (%s): %v", time.Since(start), err)
}

func TestProbe429Forever(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "999999")
		http.Error(w, "slow down tok", 429)
	}))
	defer s.Close()
	h := newHarness(t, host.Options{Timeout: time.Second})
	start := time.Now()
	_, err := h.ListTools(t.Context(), remoteSrv(s.URL), nil)
	t.Logf("429 err (%s): %v", time.Since(start), err)
}

func TestProbeEchoBody(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad key "+r.Header.Get("X-Api-Key")+" auth "+r.Header.Get("Authorization"), 400)
	}))
	defer s.Close()
	var logs syncbuf.Buffer
	h := newHarness(t, host.Options{Environ: func() []string { return []string{"TOKEN=tok-s3cr3t"} },
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	srv := remoteSrv(s.URL)
	srv.Headers = map[string]string{"X-Api-Key": "k-${TOKEN}"}
	srv.BearerToken = "b-${TOKEN}"
	_, err := h.ListTools(t.Context(), srv, nil)
	t.Logf("echo err: %v", err)
	t.Logf("leak in logs: %v", strings.Contains(logs.String(), "s3cr3t"))
}

func TestProbeSessionIDControl(t *testing.T) {
	p := newProxy(t)
	inner := p.srv.Config.Handler
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &sidWriter{ResponseWriter: w}
		inner.ServeHTTP(rw, r)
	}))
	defer s.Close()
	h := newHarness(t, host.Options{})
	start := time.Now()
	_, err := h.ListTools(t.Context(), remoteSrv(s.URL), nil)
	t.Logf("sid err (%s): %v", time.Since(start), err)
}

type sidWriter struct{ http.ResponseWriter }

func (s *sidWriter) WriteHeader(code int) {
	if v := s.Header().Get("Mcp-Session-Id"); v != "" {
		s.Header().Set("Mcp-Session-Id", v+"\x01")
	}
	s.ResponseWriter.WriteHeader(code)
}
func (s *sidWriter) Flush() { s.ResponseWriter.(http.Flusher).Flush() }
