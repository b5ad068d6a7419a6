package oauth

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/oauthtest"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

func acServer(url string, o registry.OAuth) *registry.Server {
	o.Grant = registry.GrantAuthorizationCode
	return &registry.Server{Name: "remote", URL: url, OAuth: &o}
}

// login runs Login the browser's way: the authorization URL printed, and
// followed by oauthtest.Follow (the mock approves at once, so without
// browserOnly the login would not need it: see TestLoginWithoutBrowser).
func login(t *testing.T, srv *registry.Server, dir string) (*Status, string) {
	t.Helper()
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := Login(ctx, srv, LoginOptions{Options: Options{Dir: dir}, Stderr: &stderr, Visit: oauthtest.Follow, Wait: 20 * time.Second, browserOnly: true})
	if err != nil {
		t.Fatalf("login: %v\nstderr:\n%s", err, stderr.String())
	}
	return st, stderr.String()
}

// The whole authorization_code life: `auth login` with dynamic client
// registration and no browser; the tokens saved 0600 in a 0700 folder;
// the configured scopes asked for, with offline_access (the server offers
// it, and colibri keeps refresh tokens); a later handler (another process)
// uses them for MCP calls; a refresh
// rotates the refresh token and saves the new one; the spent one is then
// useless, as the server's rotation rule says; status and logout.
func TestAuthorizationCodeLifecycle(t *testing.T) {
	m := oauthtest.StartMock(t, "MOCK_DCR=1")
	p := oauthtest.NewProtected(t, m.Issuer, "")
	dir := filepath.Join(t.TempDir(), "state", "oauth")
	srv := acServer(p.URL, registry.OAuth{Scopes: []string{"read"}})

	st, stderr := login(t, srv, dir)
	reg := m.Next(t, "register")
	ev := m.Next(t, "token")
	if ev["grant_type"] != "authorization_code" || ev["resource"] != p.URL || ev["client_id"] != reg["client_id"] {
		t.Errorf("code exchange %v: want authorization_code with resource %s by the registered client %v", ev, p.URL, reg["client_id"])
	}
	if !strings.Contains(stderr, m.Issuer+"/authorize?") || !strings.Contains(stderr, "code_challenge_method=S256") {
		t.Errorf("stderr does not show the authorization URL with PKCE:\n%s", stderr)
	}
	path := filepath.Join(dir, "remote.json")
	if !st.LoggedIn || st.TokenFile != path || !st.Refreshable || !st.Dynamic || !sameScopes(strings.Join(st.Scopes, " "), "read offline_access") {
		t.Errorf("status after login: %+v", st)
	}
	assertMode(t, path, 0o600)
	assertMode(t, dir, 0o700)
	first, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if first.RefreshToken == "" || first.Resource != p.URL || first.TokenEndpoint != m.Issuer+"/token" {
		t.Errorf("saved: refresh token %t, resource %q, token endpoint %q", first.RefreshToken != "", first.Resource, first.TokenEndpoint)
	}
	if strings.Contains(stderr, first.AccessToken) || strings.Contains(stderr, first.RefreshToken) {
		t.Error("login printed a token")
	}

	// A later process: the saved token works as it is.
	h, err := Handler(srv, nil, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := oauthtest.CallWhoami(t, p.URL, h); err != nil || !sameScopes(got, "read offline_access") {
		t.Fatalf("call with the saved token: %q, %v", got, err)
	}
	m.None(t, "token")

	// An hour later the access token has expired: it is refreshed, and the
	// rotated refresh token is saved.
	later := func() time.Time { return time.Now().Add(time.Hour) }
	h, err = Handler(srv, nil, Options{Dir: dir, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oauthtest.CallWhoami(t, p.URL, h); err != nil {
		t.Fatalf("call after expiry: %v", err)
	}
	ev = m.Next(t, "token")
	if ev["grant_type"] != "refresh_token" || ev["refresh_token"] != first.RefreshToken || ev["resource"] != p.URL || ev["client_id"] != reg["client_id"] {
		t.Errorf("refresh %v: want the saved refresh token, the resource and the client id", ev)
	}
	m.None(t, "token") // one refresh, then the new token is used
	second, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if second.RefreshToken == first.RefreshToken || second.AccessToken == first.AccessToken {
		t.Error("the refreshed (rotated) tokens were not saved")
	}
	assertMode(t, path, 0o600)

	// Another process that still holds the spent refresh token in memory
	// reads the file before refreshing, and so uses the new one.
	h2, err := Handler(srv, nil, Options{Dir: dir, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oauthtest.CallWhoami(t, p.URL, h2); err != nil {
		t.Fatalf("call with the rotated refresh token: %v", err)
	}
	if ev := m.Next(t, "token"); ev["refresh_token"] != second.RefreshToken {
		t.Errorf("refreshed with %v, want the rotated refresh token", ev["refresh_token"])
	}

	// The server now refuses every refresh token: a login is needed, and
	// the error says so exactly.
	m.RevokeRefreshTokens(t)
	h3, _ := Handler(srv, nil, Options{Dir: dir, Now: func() time.Time { return time.Now().Add(3 * time.Hour) }})
	_, err = oauthtest.CallWhoami(t, p.URL, h3)
	assertLoginRequired(t, err, "remote")

	// status, then logout, then status again and a call.
	st, err = GetStatus(srv, Options{Dir: dir})
	if err != nil || !st.LoggedIn {
		t.Errorf("status: %+v, %v", st, err)
	}
	if got, removed, err := Logout(srv, Options{Dir: dir}); err != nil || !removed || got != path {
		t.Errorf("logout: %q %t %v", got, removed, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the token file is still there: %v", err)
	}
	if _, removed, err := Logout(srv, Options{Dir: dir}); err != nil || removed {
		t.Errorf("second logout: removed %t, %v", removed, err)
	}
	st, err = GetStatus(srv, Options{Dir: dir})
	if err != nil || st.LoggedIn || st.Problem != "no token file" {
		t.Errorf("status after logout: %+v, %v", st, err)
	}
	h4, _ := Handler(srv, nil, Options{Dir: dir})
	_, err = oauthtest.CallWhoami(t, p.URL, h4)
	assertLoginRequired(t, err, "remote")
}

// A pre-registered public client (client_id in the registry, no dynamic
// registration at the server), and the server's 401 for a revoked access
// token: the handler refreshes on Authorize and the retry passes.
func TestAuthorizationCodePreregisteredAndRevokedAccessToken(t *testing.T) {
	m := oauthtest.StartMock(t)
	p := oauthtest.NewProtected(t, m.Issuer, "")
	dir := t.TempDir()
	srv := acServer(p.URL, registry.OAuth{ClientID: "colibri-cli"})
	st, _ := login(t, srv, dir)
	if st.Dynamic || st.ClientID != "colibri-cli" {
		t.Errorf("status: %+v", st)
	}
	if ev := m.Next(t, "token"); ev["client_id"] != "colibri-cli" {
		t.Errorf("code exchange %v: want the public client colibri-cli", ev)
	}
	saved, _ := Load(filepath.Join(dir, "remote.json"))
	p.Refuse(saved.AccessToken)
	h, _ := Handler(srv, nil, Options{Dir: dir})
	if _, err := oauthtest.CallWhoami(t, p.URL, h); err != nil {
		t.Fatalf("call with a revoked access token: %v", err)
	}
	if ev := m.Next(t, "token"); ev["grant_type"] != "refresh_token" {
		t.Errorf("after the 401: %v, want a refresh", ev)
	}
}

// Never logged in: the handler fails at once, with the exact message and
// LoginRequired, and nothing waits for a browser.
func TestAuthorizationCodeNoLogin(t *testing.T) {
	h, err := Handler(acServer("https://mcp.example.com/mcp", registry.OAuth{}), nil, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := h.TokenSource(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, err = ts.Token()
	assertLoginRequired(t, err, "remote")
	if err.Error() != "remote needs a login: run colibri-mcp auth login remote" {
		t.Errorf("message %q", err)
	}
}

func assertLoginRequired(t *testing.T, err error, server string) {
	t.Helper()
	var lr interface{ LoginRequired() bool }
	if !errors.As(err, &lr) || !lr.LoginRequired() {
		t.Fatalf("got %v, want an error with LoginRequired() true", err)
	}
	if want := server + " needs a login: run colibri-mcp auth login " + server; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %04o, want %04o", path, got, want)
	}
}

// sameScopes reports whether two space-separated scope lists hold the same
// scopes: their order is the server's to choose (and it varies).
func sameScopes(got, want string) bool {
	g, w := strings.Fields(got), strings.Fields(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}
