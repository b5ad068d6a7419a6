package host_test

// Hostile round three: OAuth exchanges that go wrong are "unauthorized"
// with their cause, and oauth.issuer keeps the secret from any other
// authorization server.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// recorder is an HTTP server that keeps every request it gets (method,
// path, headers and body) and answers with answer.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRecorder(t *testing.T, answer http.HandlerFunc) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.seen = append(r.seen, req.Method+" "+req.URL.String()+" "+req.Header.Get("Authorization")+" "+string(body))
		r.mu.Unlock()
		answer(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// authServer is an authorization server whose metadata names itself and
// whose token endpoint answers with token.
func authServer(t *testing.T, token http.HandlerFunc) *recorder {
	var as *recorder
	as = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"issuer":"`+as.URL+`","token_endpoint":"`+as.URL+`/token","token_endpoint_auth_methods_supported":["client_secret_post"],"code_challenge_methods_supported":["S256"]}`)
		case "/token":
			token(w, r)
		default:
			http.NotFound(w, r)
		}
	})
	return as
}

// protectedBy is an MCP endpoint that refuses every request with a 401
// whose metadata names issuer as its authorization server.
func protectedBy(t *testing.T, issuer string) string {
	var rs *httptest.Server
	rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"resource":"`+rs.URL+`/mcp","authorization_servers":["`+issuer+`"]}`)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+rs.URL+`/.well-known/oauth-protected-resource"`)
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(rs.Close)
	return rs.URL + "/mcp"
}

// Discovery that names an authorization server other than oauth.issuer is
// refused, kind unauthorized, and that server is sent nothing: no metadata
// request, no client secret.
func TestHostileOAuthForeignIssuer(t *testing.T) {
	t.Parallel()
	foreign := authServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"stolen","token_type":"Bearer","expires_in":3600}`)
	})
	var logs syncbuf.Buffer
	h := oauthHost(t, t.TempDir(), &logs)
	srv := remoteSrv(protectedBy(t, foreign.URL))
	srv.OAuth = &registry.OAuth{Grant: registry.GrantClientCredentials, ClientID: "colibri",
		ClientSecret: "${CC_SECRET}", Issuer: "https://auth.example.com"}
	_, err := h.ListTools(t.Context(), srv, nil)
	if k := failure.KindOf(err); k != failure.KindUnauthorized || !strings.Contains(err.Error(), "oauth.issuer") {
		t.Errorf("a foreign issuer: %s: %v", k, err)
	}
	for _, r := range foreign.requests() {
		t.Errorf("the foreign authorization server was sent %q", r)
	}
}

// A token endpoint that redirects, a token response colibri cannot read
// and a token file it refuses are each kind unauthorized, the cause in the
// message (they were "handshake … rejected by transport", the cause only
// in a log line).
func TestHostileOAuthMisfits(t *testing.T) {
	t.Parallel()
	redirecting := authServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://elsewhere.example/token", http.StatusTemporaryRedirect)
	})
	garbled := authServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token": [`)
	})
	dir := t.TempDir()
	link := filepath.Join(dir, "link.json")
	os.WriteFile(filepath.Join(dir, "real.json"), []byte(`{}`), 0o600)
	os.Symlink(filepath.Join(dir, "real.json"), link)
	cc := func(as *recorder) *registry.OAuth {
		return &registry.OAuth{Grant: registry.GrantClientCredentials, ClientID: "colibri", ClientSecret: "${CC_SECRET}"}
	}
	for _, tc := range []struct {
		name  string
		url   string
		oauth *registry.OAuth
		says  string
	}{
		{"a redirecting token endpoint", protectedBy(t, redirecting.URL), cc(redirecting), "307"},
		{"an unreadable token response", protectedBy(t, garbled.URL), cc(garbled), "token"},
		{"a symlinked token file", protectedBy(t, garbled.URL), &registry.OAuth{Grant: registry.GrantAuthorizationCode, ClientID: "c", TokenFile: link}, "symbolic link"},
	} {
		var logs syncbuf.Buffer
		h := oauthHost(t, t.TempDir(), &logs)
		srv := remoteSrv(tc.url)
		srv.OAuth = tc.oauth
		_, err := h.ListTools(t.Context(), srv, nil)
		if k := failure.KindOf(err); k != failure.KindUnauthorized || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), ccSecret) {
			t.Errorf("%s: %s: %v; want unauthorized saying %q", tc.name, k, err, tc.says)
		}
	}
}

// rpcCode is the JSON-RPC error code in the ask-caller fake's report of
// the answer it got ("error: {…}"), or 0.
func rpcCode(t *testing.T, got string) int {
	t.Helper()
	var e struct{ Code int }
	if err := json.Unmarshal([]byte(strings.TrimPrefix(got, "error: ")), &e); err != nil {
		t.Fatalf("not an error answer: %q", got)
	}
	return e.Code
}

// validCode: what colibri may send (CONTRACT.md section 4): a standard
// code (−32603 for a refusal of its own) or −32000…−32019; never 0.
func validCode(c int) bool {
	return c == -32700 || c >= -32603 && c <= -32600 || c >= -32019 && c <= -32000
}

// A server-to-client request colibri refuses (no call in flight that may
// answer it, or one it cannot tell apart) carries a valid JSON-RPC error
// code (it was 0).
func TestHostileRefusedRequestCode(t *testing.T) {
	h := newHarness(t, host.Options{})
	// A listing offers no capability: the server's elicitation is refused.
	caller := newAskingCaller("yes", false)
	tools, err := h.ListTools(t.Context(), fake("ask-caller"), &caller.Caller)
	if err != nil {
		t.Fatal(err)
	}
	if c := rpcCode(t, tools[0].Description); !validCode(c) {
		t.Errorf("a refused elicitation while listing: code %d", c)
	}
	// Two calls on one warm server: its request cannot be told apart.
	srv := persistent("ask-caller")
	dir := t.TempDir()
	goFile := filepath.Join(dir, "go")
	a, b := newAskingCaller("from a", false), newAskingCaller("from b", false)
	results := make(chan string, 2)
	var inflight sync.WaitGroup
	for i, c := range []*askingCaller{a, b} {
		inflight.Go(func() {
			args := map[string]any{"go": goFile, "started": filepath.Join(dir, strconv.Itoa(i)), "done": filepath.Join(dir, "done")}
			res, err := h.CallTool(t.Context(), srv, "ask", args, &c.Caller)
			results <- text(t, res, err)
		})
	}
	waitFile(t, filepath.Join(dir, "0"), 10*time.Second)
	waitFile(t, filepath.Join(dir, "1"), 10*time.Second)
	os.WriteFile(goFile, nil, 0o644)
	// Both are answered while both calls are in flight; then they end.
	waitFile(t, filepath.Join(dir, "0.answered"), 10*time.Second)
	waitFile(t, filepath.Join(dir, "1.answered"), 10*time.Second)
	os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
	inflight.Wait()
	close(results)
	for r := range results {
		if c := rpcCode(t, r); !validCode(c) || !strings.Contains(r, "cannot tell which") {
			t.Errorf("a refused ambiguous request: code %d: %q", c, r)
		}
	}
}

// A hosted result holding a number beyond float64 (1e400) is not "crashed"
// with Go type names: the server sent a number colibri cannot hold, which
// is too_large (docs/protocol.md).
func TestHostileUnreadableNumber(t *testing.T) {
	h := newHarness(t, host.Options{})
	_, err := h.CallTool(t.Context(), fake("huge-number"), "any", nil, nil)
	if k := failure.KindOf(err); k != failure.KindTooLarge || !strings.Contains(err.Error(), "1e400") {
		t.Errorf("kind %s: %v; want too_large naming 1e400", k, err)
	}
	if msg := err.Error(); strings.Contains(msg, "float64") || strings.Contains(msg, "Go value") || strings.Contains(msg, "mcp.") {
		t.Errorf("the message names Go types: %s", msg)
	}
}

// peakRSS is this process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// 40 lists of a server whose version changes at every start (each a new
// list-cache key) keep at most two of its lists: the peak RSS grows by a
// bounded amount (it grew by 121 MB, the cache filling its 64 MiB of counted
// bytes, the decoded lists and the collector's slack several times that).
func TestHostileChangingVersionRSS(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := fake("changing-version")
	srv.Env = map[string]string{"FAKEMCP_TOOLS_N": "1000"} // ~1 MB a list
	for range 2 {
		if _, err := h.ListTools(t.Context(), srv, nil); err != nil {
			t.Fatal(err)
		}
	}
	before := peakRSS(t)
	for range 40 {
		if _, err := h.ListTools(t.Context(), srv, nil); err != nil {
			t.Fatal(err)
		}
	}
	grew := peakRSS(t) - before
	t.Logf("peak RSS grew by %d MB over 40 lists of ~1 MB", grew>>20)
	if grew > 64<<20 {
		t.Errorf("peak RSS grew by %d MB over 40 lists of a changing version", grew>>20)
	}
}
