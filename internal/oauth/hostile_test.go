package oauth

// Hostile and careless authorization servers, token files and callers: a
// small fake token endpoint in Go, so that each answer is exactly the one
// under test.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/colibri-mcp/colibri-mcp/internal/oauthtest"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// fakeAS is a token endpoint whose answer to each refresh is answer(form).
type fakeAS struct {
	URL    string // the token endpoint
	mu     sync.Mutex
	forms  []map[string]string
	answer func(form map[string]string) (status int, body any)
}

func newFakeAS(t *testing.T, answer func(form map[string]string) (int, any)) *fakeAS {
	t.Helper()
	f := &fakeAS{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		form := map[string]string{}
		for k := range r.PostForm {
			form[k] = r.PostForm.Get(k)
		}
		f.mu.Lock()
		f.forms = append(f.forms, form)
		f.mu.Unlock()
		status, body := f.answer(form)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if s, ok := body.(string); ok {
			w.Write([]byte(s))
			return
		}
		json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL + "/token"
	return f
}

func (f *fakeAS) form(i int) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.forms) {
		return nil
	}
	return f.forms[i]
}

func (f *fakeAS) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.forms)
}

// savedLogin writes the token file of a past login whose access token has
// expired (by the handler's clock) and whose refresh token is rt, and
// returns a handler for it.
func savedLogin(t *testing.T, tokenURL, rt string) (*authCode, string) {
	t.Helper()
	dir := t.TempDir()
	srv := acServer("https://mcp.example.com/mcp", registry.OAuth{ClientID: "colibri-cli"})
	path := filepath.Join(dir, "remote.json")
	old := &Saved{Server: "remote", URL: srv.URL, AccessToken: "old-access", RefreshToken: rt,
		Expiry: time.Now().Add(-time.Minute).UTC(), TokenEndpoint: tokenURL, ClientID: "colibri-cli"}
	if err := Save(path, old); err != nil {
		t.Fatal(err)
	}
	h, err := Handler(srv, nil, Options{Dir: dir, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return h.(*authCode), path
}

// Two processes refresh the same expired token at once, and the server
// rotates refresh tokens (the one sent is spent). The second must not
// refresh with the spent token (that fails, or, at a server that detects
// reuse, revokes the whole grant): it waits for the first, then uses the
// tokens the first saved. Here the test is the first process: it holds
// the token file's lock while "refreshing", writes the new tokens, and
// lets go.
func TestRefreshWaitsForAnotherProcess(t *testing.T) {
	as := newFakeAS(t, func(form map[string]string) (int, any) {
		// rt-1 is spent: the other process used it.
		return http.StatusBadRequest, map[string]string{"error": "invalid_grant"}
	})
	h, path := savedLogin(t, as.URL, "rt-1")
	unlock, err := lockFile(path+".lock", time.Now().Add(time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	h.onLockWait = func() { close(waiting) }
	type result struct {
		tok string
		err error
	}
	done := make(chan result, 1)
	go func() {
		tok, err := h.Token()
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{tok: tok.AccessToken}
	}()
	select {
	case <-waiting:
	case r := <-done:
		unlock()
		t.Fatalf("the handler did not wait for the other process's refresh: %+v (%d refresh requests)", r, as.requests())
	case <-time.After(5 * time.Second):
		t.Fatal("the handler neither waited nor returned")
	}
	s, _ := Load(path)
	s.AccessToken, s.RefreshToken, s.Expiry = "new-access", "rt-2", time.Now().Add(time.Hour).UTC()
	if err := Save(path, s); err != nil {
		t.Fatal(err)
	}
	unlock()
	r := <-done
	if r.err != nil || r.tok != "new-access" {
		t.Fatalf("after the other process's refresh: %q, %v; want its new access token", r.tok, r.err)
	}
	if n := as.requests(); n != 0 {
		t.Errorf("%d refresh requests, want none", n)
	}
}

// A token endpoint that refuses a refresh with an answer quoting the
// refresh token, the client secret and the access token, in its error
// code and its description: none of them reaches the error or a log line,
// and what the server said around them still does.
func TestRefreshErrorQuotingSecretsIsRedacted(t *testing.T) {
	const rt, secret = "rt-must-not-show-1234", "cs-must-not-show-5678"
	as := newFakeAS(t, func(form map[string]string) (int, any) {
		return http.StatusBadRequest, map[string]string{
			"error":             "invalid_grant:" + form["refresh_token"],
			"error_description": "refresh token " + form["refresh_token"] + " is not for client secret " + secret + " (access token old-access-token-xyz)",
		}
	})
	var logs syncbuf.Buffer
	dir := t.TempDir()
	srv := acServer("https://mcp.example.com/mcp", registry.OAuth{ClientID: "colibri-cli", ClientSecret: "${CS}"})
	path := filepath.Join(dir, "remote.json")
	if err := Save(path, &Saved{Server: "remote", AccessToken: "old-access-token-xyz", RefreshToken: rt,
		Expiry: time.Now().Add(-time.Minute), TokenEndpoint: as.URL, ClientID: "colibri-cli", AuthStyle: "params"}); err != nil {
		t.Fatal(err)
	}
	h, err := Handler(srv, nil, Options{Dir: dir, Getenv: env(map[string]string{"CS": secret}),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.(*authCode).Token()
	if err == nil {
		t.Fatal("a refused refresh passed")
	}
	if f := as.form(0); f["client_secret"] != secret {
		t.Fatalf("the refresh did not send the secret as the test expects: %v", f)
	}
	var lr *LoginRequiredError
	var msgs []string
	if errors.As(err, &lr) {
		msgs = append(msgs, lr.Reason)
	}
	msgs = append(msgs, err.Error(), logs.String())
	for _, text := range msgs {
		for _, s := range []string{rt, secret, "old-access-token-xyz"} {
			if strings.Contains(text, s) {
				t.Errorf("%q shows a secret", text)
			}
		}
	}
	if !strings.Contains(err.Error(), "the token endpoint answered 400 invalid_grant:[redacted]: refresh token [redacted] is not for client secret [redacted]") {
		t.Errorf("the error does not keep what the server said around the secrets: %v", err)
	}
}

// expires_in out of range: a huge one must not overflow into an expiry in
// the past (every use would then refresh again, rotating the refresh token
// each time); a negative one is no expiry at all (as a missing one).
func TestRefreshExpiresInOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		expiresIn string
		future    bool // the saved expiry is in the future; else zero
	}{
		{"9223372037", true}, // × 1e9 ns overflows int64
		{"100000000000000000000", true},
		{"1e400", true},
		{"-5", false},
		{`"3600"`, true},
	} {
		t.Run(tc.expiresIn, func(t *testing.T) {
			n := 0
			as := newFakeAS(t, func(form map[string]string) (int, any) {
				n++
				return http.StatusOK, fmt.Sprintf(`{"access_token":"at-%d","token_type":"Bearer","refresh_token":"rt-%d","expires_in":%s}`, n, n, tc.expiresIn)
			})
			h, path := savedLogin(t, as.URL, "rt-0")
			for range 3 {
				if tok, err := h.Token(); err != nil || tok.AccessToken != "at-1" {
					t.Fatalf("token: %v, %v", tok, err)
				}
			}
			if got := as.requests(); got != 1 {
				t.Errorf("%d refreshes for three uses, want 1", got)
			}
			s, _ := Load(path)
			if tc.future && !s.Expiry.After(time.Now().Add(time.Hour/2)) || !tc.future && !s.Expiry.IsZero() {
				t.Errorf("saved expiry %v", s.Expiry)
			}
		})
	}
}

// While `auth login` waits, another local process (or a web page in the
// browser) sends forged redirects to the loopback listener: a code with a
// wrong state, an error with no state. Each is refused with 400 and the
// login goes on to finish with the real redirect.
func TestLoginIgnoresForgedRedirects(t *testing.T) {
	m := oauthtest.StartMock(t)
	p := oauthtest.NewProtected(t, m.Issuer, "")
	dir := t.TempDir()
	srv := acServer(p.URL, registry.OAuth{ClientID: "colibri-cli"})
	forge := func(ctx context.Context, authURL string) error {
		u, err := url.Parse(authURL)
		if err != nil {
			return err
		}
		redirect := u.Query().Get("redirect_uri")
		for _, q := range []string{"code=forged&state=wrong", "error=access_denied", "code=forged"} {
			resp, err := http.Get(redirect + "?" + q)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "state parameter is wrong") {
				return fmt.Errorf("forged redirect ?%s: %d %s", q, resp.StatusCode, body)
			}
		}
		return oauthtest.Follow(ctx, authURL)
	}
	var stderr bytes.Buffer
	st, err := Login(t.Context(), srv, LoginOptions{Options: Options{Dir: dir}, Stderr: &stderr, Visit: forge, Wait: 20 * time.Second, browserOnly: true})
	if err != nil {
		t.Fatalf("login: %v\nstderr:\n%s", err, stderr.String())
	}
	if !st.LoggedIn {
		t.Errorf("status: %+v", st)
	}
	if ev := m.Next(t, "token"); ev["grant_type"] != "authorization_code" {
		t.Errorf("token request %v", ev)
	}
}

// A token endpoint that answers a refresh with 307 to another server: a
// followed 307 sends the same form again, refresh token and client secret
// included, to wherever it points. colibri does not follow it.
func TestRefreshDoesNotFollowRedirects(t *testing.T) {
	var elsewhere sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		elsewhere.Lock()
		leaked = append(leaked, r.PostForm.Encode())
		elsewhere.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"stolen","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(other.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/token", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	h, _ := savedLogin(t, redirector.URL+"/token", "rt-must-stay-home")
	_, err := h.Token()
	elsewhere.Lock()
	defer elsewhere.Unlock()
	if len(leaked) != 0 {
		t.Errorf("the refresh was sent on to another server: %q", leaked)
	}
	if err == nil || !strings.Contains(err.Error(), "the token endpoint answered 307") {
		t.Errorf("got %v, want the token endpoint's 307", err)
	}
}

// The same for a client_credentials token: the client secret is not sent
// on to where the token endpoint redirects.
func TestClientCredentialsDoesNotFollowRedirects(t *testing.T) {
	var leaks sync.Mutex
	leaked := 0
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaks.Lock()
		leaked++
		leaks.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"stolen","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(other.Close)
	_, err := ccToken(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/token", http.StatusPermanentRedirect)
	})
	leaks.Lock()
	defer leaks.Unlock()
	if leaked != 0 {
		t.Errorf("the client secret was sent on to another server %d times", leaked)
	}
	if err == nil || !strings.Contains(err.Error(), "the token endpoint answered 308") {
		t.Errorf("got %v, want the token endpoint's 308", err)
	}
}

// A symbolic link at the token path (planted in a folder others may write
// to, say) would make colibri send another file's tokens, say another
// server's, to this server. Load refuses it; Save replaces the link, never
// the file it points at.
func TestTokenFileSymlink(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.json")
	if err := Save(other, &Saved{Server: "other", AccessToken: "other-servers-token"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "remote.json")
	if err := os.Symlink(other, path); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), "token file "+path+" is a symbolic link") {
		t.Fatalf("load through a symlink: %+v, %v", s, err)
	}
	h, err := Handler(acServer("https://mcp.example.com/mcp", registry.OAuth{}), nil, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := h.(*authCode).Token(); err == nil {
		t.Errorf("the handler served %q through the symlink", tok.AccessToken)
	}
	if err := Save(path, &Saved{Server: "remote", AccessToken: "new"}); err != nil {
		t.Fatal(err)
	}
	if s, err := Load(other); err != nil || s.AccessToken != "other-servers-token" {
		t.Errorf("Save wrote through the symlink: %+v, %v", s, err)
	}
}

// ccToken fetches a client_credentials token from an authorization server
// whose metadata is proper and whose token endpoint is token.
func ccToken(t *testing.T, token http.HandlerFunc) (*oauth2.Token, error) {
	t.Helper()
	mux := http.NewServeMux()
	as := httptest.NewServer(mux)
	t.Cleanup(as.Close)
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": as.URL + "/mcp", "authorization_servers": []string{as.URL}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"issuer": as.URL, "token_endpoint": as.URL + "/token",
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"client_secret_post"}})
	})
	mux.HandleFunc("/token", token)
	h, err := Handler(ccServer(as.URL+"/mcp", registry.OAuth{ClientID: "colibri", ClientSecret: testSecret}), nil, Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := h.TokenSource(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return ts.Token()
}

// An access token or token type with a line break (or any byte that is not
// visible ASCII) cannot go into an Authorization header: it is refused
// where it arrives, with an error that says so (and does not quote it),
// and is never saved.
func TestTokenWithControlCharacters(t *testing.T) {
	for _, body := range []string{
		`{"access_token":"good\r\nX-Injected: 1","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-2"}`,
		`{"access_token":"good","token_type":"Bearer\r\nX-Injected: 1","expires_in":3600,"refresh_token":"rt-2"}`,
		`{"access_token":"with space","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-2"}`,
	} {
		const want = "the token endpoint answered a token that cannot be sent in an HTTP header"
		as := newFakeAS(t, func(map[string]string) (int, any) { return http.StatusOK, body })
		h, path := savedLogin(t, as.URL, "rt-1")
		tok, err := h.Token()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Injected") {
			t.Errorf("refresh answering %s: %v, %v", body, tok, err)
		}
		if s, _ := Load(path); s == nil || s.AccessToken != "old-access" {
			t.Errorf("refresh answering %s: the file now holds %+v", body, s)
		}
		tok, err = ccToken(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body))
		})
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Injected") {
			t.Errorf("client_credentials answering %s: %v, %v", body, tok, err)
		}
	}
}
