package oauth

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/oauthtest"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

const testSecret = "s3cret-value-that-must-not-show"

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func ccServer(url string, o registry.OAuth) *registry.Server {
	o.Grant = registry.GrantClientCredentials
	return &registry.Server{Name: "svc", URL: url, OAuth: &o}
}

// An MCP call with the client_credentials grant: the token endpoint is
// discovered from the server's metadata, the token is requested with the
// configured scopes and the RFC 8707 resource (the server checks the
// token's audience), sent as a Bearer token, and reused for a second
// connection.
func TestClientCredentials(t *testing.T) {
	m := oauthtest.StartMock(t)
	p := oauthtest.NewProtected(t, m.Issuer, "")
	h, err := Handler(ccServer(p.URL, registry.OAuth{ClientID: "colibri", ClientSecret: "${CC_SECRET}", Scopes: []string{"read", "write"}}),
		nil, Options{Getenv: env(map[string]string{"CC_SECRET": testSecret})})
	if err != nil {
		t.Fatal(err)
	}
	got, err := oauthtest.CallWhoami(t, p.URL, h)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if !sameScopes(got, "read write") {
		t.Errorf("granted scopes %q, want \"read write\"", got)
	}
	ev := m.Next(t, "token")
	if ev["grant_type"] != "client_credentials" || ev["resource"] != p.URL || ev["scope"] != "read write" || ev["client_id"] != "colibri" || ev["auth"] != "basic" {
		t.Errorf("token request %v: want client_credentials, resource %s, scope \"read write\", client colibri by Basic auth", ev, p.URL)
	}
	if _, err := oauthtest.CallWhoami(t, p.URL, h); err != nil {
		t.Fatalf("second call: %v", err)
	}
	m.None(t, "token")
	if n := len(p.Accepted()); n < 2 {
		t.Errorf("the server accepted %d requests with a token", n)
	}
}

// oauth.resource, when set, is the resource asked for (and the token's
// audience), instead of the one the metadata names.
func TestClientCredentialsResource(t *testing.T) {
	m := oauthtest.StartMock(t)
	p := oauthtest.NewProtected(t, m.Issuer, "https://api.example.com/")
	h, err := Handler(ccServer(p.URL, registry.OAuth{ClientID: "colibri", ClientSecret: testSecret, Resource: "https://api.example.com/"}), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oauthtest.CallWhoami(t, p.URL, h); err != nil {
		t.Fatalf("call: %v", err)
	}
	if ev := m.Next(t, "token"); ev["resource"] != "https://api.example.com/" || ev["scope"] != "read write" {
		t.Errorf("token request %v: want the configured resource, and the metadata's scopes_supported", ev)
	}
}

// A token is fetched again when it expires within EarlyRefresh, and not
// before: with a 20 s lifetime every use fetches; with an hour, one fetch.
func TestClientCredentialsRefreshBeforeExpiry(t *testing.T) {
	for _, tc := range []struct {
		expiresIn string
		fetches   int
	}{{"20", 3}, {"3600", 1}} {
		t.Run(tc.expiresIn, func(t *testing.T) {
			m := oauthtest.StartMock(t, "MOCK_EXPIRES_IN="+tc.expiresIn)
			p := oauthtest.NewProtected(t, m.Issuer, "")
			h, err := Handler(ccServer(p.URL, registry.OAuth{ClientID: "colibri", ClientSecret: testSecret}), nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ts, err := h.TokenSource(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			tokens := map[string]bool{}
			for range 3 {
				tok, err := ts.Token()
				if err != nil {
					t.Fatal(err)
				}
				tokens[tok.AccessToken] = true
			}
			for range tc.fetches {
				m.Next(t, "token")
			}
			m.None(t, "token")
			if len(tokens) != tc.fetches {
				t.Errorf("%d distinct tokens for %d fetches", len(tokens), tc.fetches)
			}
		})
	}
}

// A token the server refuses (revoked early) is replaced on the 401: the
// transport calls Authorize, which fetches a new one, and the retry passes.
func TestClientCredentialsAuthorizeReplacesRefusedToken(t *testing.T) {
	m := oauthtest.StartMock(t)
	p := oauthtest.NewProtected(t, m.Issuer, "")
	h, err := Handler(ccServer(p.URL, registry.OAuth{ClientID: "colibri", ClientSecret: testSecret}), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := h.TokenSource(context.Background())
	old, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	m.Next(t, "token")
	p.Refuse(old.AccessToken)
	if _, err := oauthtest.CallWhoami(t, p.URL, h); err != nil {
		t.Fatalf("call after the token was refused: %v", err)
	}
	m.Next(t, "token")
	for _, tok := range p.Accepted() {
		if tok == old.AccessToken {
			t.Error("the refused token was accepted")
		}
	}
}

// The client secret never appears in an error or a log line, even when the
// authorization server refuses it; a missing ${NAME} is named.
func TestClientCredentialsSecretNeverShown(t *testing.T) {
	m := oauthtest.StartMock(t)
	p := oauthtest.NewProtected(t, m.Issuer, "")
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	// No metadata at this URL: discovery falls back to the server's own
	// origin, whose /token does not exist (404).
	h, err := Handler(ccServer(p.URL+"/nowhere", registry.OAuth{ClientID: "colibri", ClientSecret: testSecret}), nil, Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	_, callErr := oauthtest.CallWhoami(t, p.URL+"/nowhere", h)
	if callErr == nil {
		t.Fatal("a call with no reachable token endpoint passed")
	}
	for what, text := range map[string]string{"error": callErr.Error(), "logs": logs.String()} {
		if strings.Contains(text, testSecret) {
			t.Errorf("the client secret is in the %s: %s", what, text)
		}
	}
	if !strings.Contains(callErr.Error(), "404") {
		t.Errorf("error %q does not say what the token endpoint answered", callErr)
	}

	// The token endpoint refuses the secret with an answer that quotes it.
	const bad = "bad-" + testSecret
	h, err = Handler(ccServer(p.URL, registry.OAuth{ClientID: "colibri", ClientSecret: bad}), nil, Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	_, callErr = oauthtest.CallWhoami(t, p.URL, h)
	if callErr == nil || !strings.Contains(callErr.Error(), "the token endpoint answered 401 invalid_client: unknown client") {
		t.Errorf("refused secret: got %v, want the token endpoint's status, code and description", callErr)
	}
	for what, text := range map[string]string{"error": callErr.Error(), "logs": logs.String()} {
		if strings.Contains(text, testSecret) {
			t.Errorf("the refused client secret is in the %s: %s", what, text)
		}
	}

	// The refusal's description quotes the secret: the server's words are
	// kept, the secret is not.
	const echoed = "echo-" + testSecret
	h, err = Handler(ccServer(p.URL, registry.OAuth{ClientID: "colibri", ClientSecret: echoed}), nil, Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	_, callErr = oauthtest.CallWhoami(t, p.URL, h)
	if callErr == nil || !strings.Contains(callErr.Error(), "the token endpoint answered 401 invalid_client: unknown client secret [redacted]") {
		t.Errorf("echoed secret: got %v, want the description with the secret redacted", callErr)
	}
	for what, text := range map[string]string{"error": callErr.Error(), "logs": logs.String()} {
		if strings.Contains(text, testSecret) {
			t.Errorf("the echoed client secret is in the %s: %s", what, text)
		}
	}

	_, err = Handler(ccServer(p.URL, registry.OAuth{ClientID: "colibri", ClientSecret: "${NOT_SET_ANYWHERE}"}), nil, Options{Getenv: env(nil)})
	var missing *registry.MissingVarError
	if !errors.As(err, &missing) || missing.Name != "NOT_SET_ANYWHERE" || !strings.Contains(err.Error(), "client_secret") {
		t.Errorf("missing variable: got %v, want a MissingVarError naming NOT_SET_ANYWHERE and client_secret", err)
	}
	_, err = Handler(ccServer(p.URL, registry.OAuth{ClientSecret: testSecret}), nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "client_id") || bytes.Contains([]byte(err.Error()), []byte(testSecret)) {
		t.Errorf("no client_id: got %v", err)
	}
}
