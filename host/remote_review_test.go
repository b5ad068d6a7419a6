package host_test

// Hostile remote servers and careless registries (issue 14 review): each
// test here failed before the fix it names.

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

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
	_, err := h.CallTool(t.Context(), srv, "echo", map[string]any{"message": "hi"}, nil)
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
