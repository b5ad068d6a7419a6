package oauth

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/oauthtest"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// An authorization server that approves without a user (the mock, as the
// conformance suite's does) redirects colibri's own request to the
// loopback callback: `auth login` then completes with no browser, no
// Visit and no wait, and says so instead of printing the URL to open.
func TestLoginWithoutBrowser(t *testing.T) {
	m := oauthtest.StartMock(t, "MOCK_DCR=1")
	p := oauthtest.NewProtected(t, m.Issuer, "")
	dir := filepath.Join(t.TempDir(), "oauth")
	srv := acServer(p.URL, registry.OAuth{Scopes: []string{"read"}})
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := Login(ctx, srv, LoginOptions{Options: Options{Dir: dir}, Stderr: &stderr, Wait: 20 * time.Second,
		OpenBrowser: true, Open: func(string) error { t.Error("a browser was opened"); return nil }})
	if err != nil {
		t.Fatalf("login: %v\nstderr:\n%s", err, stderr.String())
	}
	if want := "The authorization server approved the login to remote without a browser.\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if ev := m.Next(t, "token"); ev["grant_type"] != "authorization_code" || ev["resource"] != p.URL {
		t.Errorf("code exchange %v", ev)
	}
	if !st.LoggedIn || !st.Dynamic || !sameScopes(strings.Join(st.Scopes, " "), "read offline_access") {
		t.Errorf("status after login: %+v", st)
	}
	h, err := Handler(srv, nil, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := oauthtest.CallWhoami(t, p.URL, h); err != nil || !sameScopes(got, "read offline_access") {
		t.Fatalf("call with the saved token: %q, %v", got, err)
	}
}

// approveDirect takes only the authorization server's immediate redirect
// to the callback with this login's state; everything else leaves the
// login to the browser, except a refusal that no person can change.
func TestApproveDirect(t *testing.T) {
	const redirect = "http://127.0.0.1:1/callback"
	var answer func(w http.ResponseWriter, r *http.Request)
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" {
			t.Errorf("the authorization endpoint was sent credentials")
		}
		answer(w, r)
	}))
	defer as.Close()
	to := func(loc string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, loc, http.StatusFound) }
	}
	cases := []struct {
		name   string
		answer func(http.ResponseWriter, *http.Request)
		ok     bool
		code   string
		err    string
	}{
		{"sign-in page", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "<form>sign in</form>") }, false, "", ""},
		{"redirect to sign in", to("/login?next=authorize"), false, "", ""},
		{"callback with another state", to(redirect + "?code=c&state=other"), false, "", ""},
		{"callback without a state", to(redirect + "?code=c"), false, "", ""},
		{"another port", to("http://127.0.0.1:2/callback?code=c&state=st8"), false, "", ""},
		{"another path", to("http://127.0.0.1:1/elsewhere?code=c&state=st8"), false, "", ""},
		{"a person must sign in", to(redirect + "?error=login_required&state=st8"), false, "", ""},
		{"a person must consent", to(redirect + "?error=consent_required&state=st8"), false, "", ""},
		{"server error", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) }, false, "", ""},
		{"approved", to(redirect + "?code=c1&state=st8&iss=https%3A%2F%2Fas.example"), true, "c1", ""},
		{"refused", to(redirect + "?error=invalid_scope&error_description=no+such+scope&state=st8"), true, "", "the authorization server refused: invalid_scope no such scope"},
		{"no code", to(redirect + "?state=st8"), true, "", "the redirect carried no authorization code"},
	}
	want := &wantState{}
	want.set("st8")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			answer = tc.answer
			res, ok := approveDirect(t.Context(), as.Client(), as.URL+"/authorize?state=st8", redirect, want)
			if ok != tc.ok {
				t.Fatalf("ok %t, want %t", ok, tc.ok)
			}
			if !ok {
				return
			}
			if res.code != tc.code || (res.err == nil) != (tc.err == "") || res.err != nil && res.err.Error() != tc.err {
				t.Errorf("result %+v, want code %q err %q", res, tc.code, tc.err)
			}
			if tc.code != "" && (res.state != "st8" || res.iss != "https://as.example") {
				t.Errorf("state %q iss %q", res.state, res.iss)
			}
		})
	}

	// An authorization server that does not answer: the wait ends with the
	// client's timeout, and the browser takes over.
	hang := make(chan struct{})
	defer close(hang)
	answer = func(http.ResponseWriter, *http.Request) { <-hang }
	hc := &http.Client{Timeout: 100 * time.Millisecond}
	if _, ok := approveDirect(t.Context(), hc, as.URL+"/authorize?state=st8", redirect, want); ok {
		t.Error("a silent authorization server approved")
	}
	// Down: the same.
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	if _, ok := approveDirect(t.Context(), hc, down.URL+"/authorize", redirect, want); ok {
		t.Error("an unreachable authorization server approved")
	}
}
