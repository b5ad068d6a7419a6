package host_test

// OAuth through a remote upstream, end to end: a Host with Options.OAuth
// set as cmd/colibri-mcp sets it (internal/oauth's handlers), a real
// authorization server (oauth2-mock-server) and a go-sdk MCP server that
// accepts only its tokens for its own resource.

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/oauth"
	"github.com/colibri-mcp/colibri-mcp/internal/oauthtest"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

const ccSecret = "cc-s3cr3t-value"

// oauthHost is a harness whose OAuth hook is internal/oauth's, as cmd
// wires it, with its logs in logs.
func oauthHost(t *testing.T, dir string, logs *syncbuf.Buffer) *harness {
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	env := map[string]string{"CC_SECRET": ccSecret, "BAD_SECRET": "bad-" + ccSecret}
	handlers := oauth.NewHandlers(oauth.Options{Logger: logger, Dir: dir,
		Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	return newHarness(t, host.Options{Logger: logger, OAuth: handlers.Handler})
}

func whoami(t *testing.T, h *harness, srv *registry.Server) (string, error) {
	t.Helper()
	res, err := h.CallTool(t.Context(), srv, "whoami", nil, nil, nil)
	if err != nil {
		return "", err
	}
	if res.IsError {
		t.Fatalf("whoami: isError: %v", res.Content)
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

func TestRemoteOAuthClientCredentials(t *testing.T) {
	t.Parallel()
	m := oauthtest.StartMock(t)
	p := oauthtest.NewProtected(t, m.Issuer, "")
	var logs syncbuf.Buffer
	h := oauthHost(t, t.TempDir(), &logs)
	srv := remoteSrv(p.URL)
	srv.OAuth = &registry.OAuth{Grant: registry.GrantClientCredentials, ClientID: "colibri",
		ClientSecret: "${CC_SECRET}", Scopes: []string{"read"}}

	tools, err := h.ListTools(t.Context(), srv, nil)
	if err != nil || len(tools) != 1 || tools[0].Name != "whoami" {
		t.Fatalf("list: %v, %v", tools, err)
	}
	if got, err := whoami(t, h, srv); err != nil || got != "read" {
		t.Fatalf("call: %q, %v; want the granted scope \"read\"", got, err)
	}
	ev := m.Next(t, "token")
	if ev["grant_type"] != "client_credentials" || ev["resource"] != p.URL || ev["scope"] != "read" || ev["client_id"] != "colibri" {
		t.Errorf("token request %v: want client_credentials for resource %s, scope read, client colibri", ev, p.URL)
	}
	m.None(t, "token") // one token for the list and the call
	accepted := p.Accepted()
	if len(accepted) == 0 {
		t.Fatal("the MCP server accepted no token")
	}
	for _, tok := range accepted {
		if c := oauthtest.ClaimsOf(t, tok); c.Iss != m.Issuer || c.Aud != p.URL || c.Scope != "read" {
			t.Errorf("the MCP server saw a token for %+v; want the mock's, for %s, scope read", c, p.URL)
		}
	}

	// The MCP server refuses the token from now on (revoked early): one
	// re-authorization (one new token), and the call passes.
	old := accepted[len(accepted)-1]
	p.Refuse(old)
	if got, err := whoami(t, h, srv); err != nil || got != "read" {
		t.Fatalf("call after the token was refused: %q, %v", got, err)
	}
	m.Next(t, "token")
	m.None(t, "token")
	if p.Denied() == 0 {
		t.Error("the refused token was never sent: the test proves nothing")
	}
	if last := p.Accepted(); last[len(last)-1] == old {
		t.Error("the refused token was accepted")
	}

	// A client secret the authorization server refuses: unauthorized, not
	// retried, and the secret nowhere.
	bad := remoteSrv(p.URL)
	bad.Name = "badsecret"
	bad.OAuth = &registry.OAuth{Grant: registry.GrantClientCredentials, ClientID: "colibri", ClientSecret: "${BAD_SECRET}"}
	_, err = h.CallTool(t.Context(), bad, "whoami", nil, nil, nil)
	e := wantKind(t, err, failure.KindUnauthorized, failure.PhaseInitialize)
	if e.Attempts > 1 || !strings.Contains(e.Error(), "the token endpoint answered 401 invalid_client") {
		t.Errorf("err = %v (attempts %d, http_status %d); want the token endpoint's refusal, once", e, e.Attempts, e.HTTPStatus)
	}
	h.Close()
	for what, text := range map[string]string{"error": e.Error(), "logs": logs.String()} {
		if strings.Contains(text, "s3cr3t") {
			t.Errorf("the client secret is in the %s: %s", what, text)
		}
	}
}

func TestRemoteOAuthAuthorizationCode(t *testing.T) {
	t.Parallel()
	m := oauthtest.StartMock(t, "MOCK_DCR=1")
	p := oauthtest.NewProtected(t, m.Issuer, "")
	dir := t.TempDir()
	var logs syncbuf.Buffer
	h := oauthHost(t, dir, &logs)
	srv := remoteSrv(p.URL)
	srv.OAuth = &registry.OAuth{Grant: registry.GrantAuthorizationCode, Scopes: []string{"read"}}

	// Never logged in: at once, unauthorized, naming the command; nothing
	// waits for a browser, nothing is retried.
	// (A Host that waited would end at its phase timeout, as kind timeout;
	// one that retried would say attempts > 1. No wall-clock bound: a
	// loaded machine may be slow to answer even at once.)
	_, err := h.CallTool(t.Context(), srv, "whoami", nil, nil, nil)
	e := wantKind(t, err, failure.KindUnauthorized, failure.PhaseInitialize)
	if got := e.Err.Error(); got != "remote needs a login: run colibri-mcp auth login remote" || e.Attempts > 1 {
		t.Errorf("message %q (attempts %d); want exactly the login command, once", got, e.Attempts)
	}
	m.None(t, "token")

	// A browser-free login, as `colibri-mcp auth login remote` runs it.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var stderr strings.Builder
	if _, err := oauth.Login(ctx, srv, oauth.LoginOptions{Options: oauth.Options{Dir: dir}, Stderr: &stderr, Visit: oauthtest.Follow, Wait: 20 * time.Second}); err != nil {
		t.Fatalf("login: %v\n%s", err, stderr.String())
	}
	if ev := m.Next(t, "token"); ev["grant_type"] != "authorization_code" {
		t.Fatalf("login's token request: %v", ev)
	}

	// The same Host now uses the saved token: no new token is asked for.
	got, err := whoami(t, h, srv)
	if err != nil || !strings.Contains(" "+got+" ", " read ") {
		t.Fatalf("call after the login: %q, %v", got, err)
	}
	m.None(t, "token")
	if len(p.Accepted()) == 0 {
		t.Error("the MCP server accepted no token")
	}
}

// OAuth exchanges that go wrong are "unauthorized" with their cause, and
// oauth.issuer keeps the secret from any other authorization server.

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
