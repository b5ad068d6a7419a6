// Package oauth gives remote upstreams their OAuth 2.1 credentials, as go-sdk
// [auth.OAuthHandler]s, and runs `colibri-mcp auth login|status|logout`.
//
// Two grants (docs/oauth.md):
//
//   - client_credentials runs unattended: the token endpoint is discovered
//     from the server's protected-resource metadata (RFC 9728) and the
//     authorization server's metadata (RFC 8414); tokens, requested with the
//     RFC 8707 resource and the configured scopes, are kept in memory and
//     fetched again shortly before they expire.
//   - authorization_code needs one `colibri-mcp auth login SERVER` ([Login]),
//     which saves the tokens to a file (mode 0600). The handler serves them,
//     refreshes them with the refresh token and saves each rotated refresh
//     token. Without a usable token it fails with a [LoginRequiredError]; it
//     never opens a browser or waits for a person.
//
// A use:
//
//	h, err := oauth.Handler(srv, httpClient, oauth.Options{Logger: logger})
//	transport := &mcp.StreamableClientTransport{Endpoint: srv.URL, OAuthHandler: h}
//
// Secrets (client secrets, access and refresh tokens) never appear in an
// error or a log line of this package.
package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Options tune the handlers. The zero value is ready to use.
type Options struct {
	// Logger receives a line for each token fetched or refreshed (never the
	// token); nil discards them.
	Logger *slog.Logger
	// Timeout bounds each request to the authorization server (discovery,
	// token, refresh); zero means 30 s.
	Timeout time.Duration
	// Getenv expands ${NAME} in client_secret and finds HOME and
	// XDG_STATE_HOME; nil means os.LookupEnv.
	Getenv func(string) (string, bool)
	// Dir is the folder of token files without oauth.token_file; "" means
	// the default (see [TokenPath]).
	Dir string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// EarlyRefresh is how long before its expiry a token is replaced, so that a
// request never leaves with a token that expires on the way.
const EarlyRefresh = 30 * time.Second

const defaultTimeout = 30 * time.Second

func (o *Options) fill() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.Getenv == nil {
		o.Getenv = os.LookupEnv
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Handler returns the OAuth handler of a remote server with an "oauth"
// entry, for go-sdk's StreamableClientTransport.OAuthHandler (and its
// TokenSource for SSE requests). hc is the HTTP client for the
// authorization server; nil means a plain one. It should not add the
// server's own headers: they are for the MCP server, not the authorization
// server.
func Handler(srv *registry.Server, hc *http.Client, opts Options) (auth.OAuthHandler, error) {
	opts.fill()
	if srv.OAuth == nil {
		return nil, fmt.Errorf("server %q has no oauth entry", srv.Name)
	}
	hc = httpClient(srv, hc, opts.Timeout)
	switch srv.OAuth.Grant {
	case registry.GrantClientCredentials:
		return newClientCredentials(srv, hc, opts)
	case registry.GrantAuthorizationCode:
		return newAuthCode(srv, hc, opts)
	}
	return nil, fmt.Errorf("oauth.grant %q: want %s or %s", srv.OAuth.Grant, registry.GrantClientCredentials, registry.GrantAuthorizationCode)
}

// httpClient is the client for the authorization server: hc's transport
// with a timeout of its own (token requests are short; the MCP client's
// own http.Client must have none, for its event streams). With
// allow_private_network, a plain *http.Transport gets a dialer of its own:
// go-sdk's discovery then no longer refuses private addresses (it keeps
// its checks only for an http.Transport that dials as the default does).
func httpClient(srv *registry.Server, hc *http.Client, timeout time.Duration) *http.Client {
	var rt http.RoundTripper
	var jar http.CookieJar
	var check func(*http.Request, []*http.Request) error
	if hc != nil {
		rt, jar, check = hc.Transport, hc.Jar, hc.CheckRedirect
	}
	if srv.AllowPrivateNetwork {
		base, ok := rt.(*http.Transport)
		if rt == nil {
			base, ok = http.DefaultTransport.(*http.Transport)
		}
		if ok && base.DialContext == nil && base.DialTLSContext == nil {
			t := base.Clone()
			t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
			rt = t
		}
	}
	return &http.Client{Transport: rt, Jar: jar, CheckRedirect: check, Timeout: timeout}
}

// noRedirects is hc for token requests: a redirect is not followed but
// answered as it is (a failure). A followed 307 or 308 would send the same
// form again, refresh token and client secret included, to wherever the
// token endpoint points; RFC 6749 asks no client to follow one there.
func noRedirects(hc *http.Client) *http.Client {
	c := *hc
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// LoginRequiredError is an authorization_code server without a usable
// token: never logged in, logged out, or its refresh token refused. Remote
// upstreams report it as kind "unauthorized".
type LoginRequiredError struct {
	Server string
	// Reason says why, for logs and `auth status`; it is not in Error,
	// whose text is exactly what to do.
	Reason string
}

func (e *LoginRequiredError) Error() string {
	return fmt.Sprintf("%s needs a login: run colibri-mcp auth login %s", e.Server, e.Server)
}

// LoginRequired reports that only `colibri-mcp auth login` can help.
func (e *LoginRequiredError) LoginRequired() bool { return true }

// TokenError is an authorization server's refusal at its token endpoint
// (RFC 6749 section 5.2): its status, error code and description, never
// the request or the rest of the body.
type TokenError struct {
	Status      int
	Code        string // invalid_grant, invalid_client, …
	Description string
}

func (e *TokenError) Error() string {
	msg := fmt.Sprintf("the token endpoint answered %d", e.Status)
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.Description != "" {
		msg += ": " + e.Description
	}
	if e.Status >= 300 && e.Status < 400 {
		msg += " (a redirect, which colibri does not follow with credentials)"
	}
	return msg
}

// CredentialsRefused reports whether the authorization server refused the
// request itself (a 4xx: invalid_client, invalid_grant, invalid_scope…),
// which asking again will not change; a 5xx is the server's trouble.
// Remote upstreams report such a refusal as kind "unauthorized".
func (e *TokenError) CredentialsRefused() bool { return e.Status >= 400 && e.Status < 500 }

// tokenError turns x/oauth2's errors into ones safe to show: a
// RetrieveError's Error() quotes the whole response body. secrets are
// what the request carried (client secret, refresh token…): a careless
// server may quote them in its error code or description.
func tokenError(err error, secrets ...string) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		te := newTokenError(0, re.ErrorCode, re.ErrorDescription, secrets...)
		if re.Response != nil {
			te.Status = re.Response.StatusCode
		}
		return te
	}
	return err
}

// newTokenError is a token endpoint's refusal with the secrets of the
// request taken out of the server's words.
func newTokenError(status int, code, description string, secrets ...string) *TokenError {
	return &TokenError{Status: status, Code: clip(redact(code, secrets...)), Description: clip(redact(description, secrets...))}
}

// redact replaces each secret in s (as it is, and form-encoded, as it was
// sent) with [redacted].
func redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) < 4 { // too short to tell from ordinary words
			continue
		}
		s = strings.ReplaceAll(s, sec, "[redacted]")
		if q := url.QueryEscape(sec); q != sec {
			s = strings.ReplaceAll(s, q, "[redacted]")
		}
	}
	return s
}

// clip keeps an authorization server's free text short and on one line.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// refresh exchanges a refresh token for new tokens (RFC 6749 section 6),
// with the RFC 8707 resource that MCP asks for in every token request
// (x/oauth2's own refresh cannot send it). secret is the client secret (the
// saved one of a dynamic client, else the registry's); now is the clock
// that the new expiry is reckoned from.
func refresh(ctx context.Context, hc *http.Client, s *Saved, secret string, now func() time.Time) (*oauth2.Token, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {s.RefreshToken}}
	if s.Resource != "" {
		form.Set("resource", s.Resource)
	}
	basic := secret != "" && s.AuthStyle != "params"
	if !basic {
		form.Set("client_id", s.ClientID)
		if secret != "" {
			form.Set("client_secret", secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("refreshing the token: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		// RFC 6749 section 2.3.1: both parts form-encoded first.
		req.SetBasicAuth(url.QueryEscape(s.ClientID), url.QueryEscape(secret))
	}
	resp, err := noRedirects(hc).Do(req)
	if err != nil {
		return nil, fmt.Errorf("refreshing the token: %w", scrubURLError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("refreshing the token: reading the answer: %w", err)
	}
	var r struct {
		AccessToken  string      `json:"access_token"`
		TokenType    string      `json:"token_type"`
		RefreshToken string      `json:"refresh_token"`
		ExpiresIn    json.Number `json:"expires_in"`
		Scope        string      `json:"scope"`
		Error        string      `json:"error"`
		Description  string      `json:"error_description"`
	}
	jsonErr := json.Unmarshal(body, &r)
	if resp.StatusCode < 200 || resp.StatusCode > 299 || r.Error != "" {
		return nil, newTokenError(resp.StatusCode, r.Error, r.Description, s.RefreshToken, secret, s.AccessToken)
	}
	if jsonErr != nil || r.AccessToken == "" {
		return nil, fmt.Errorf("refreshing the token: the token endpoint answered %d without an access token", resp.StatusCode)
	}
	t := &oauth2.Token{AccessToken: r.AccessToken, TokenType: r.TokenType, RefreshToken: r.RefreshToken}
	if err := checkToken(t); err != nil {
		return nil, fmt.Errorf("refreshing the token: %w", err)
	}
	t.Expiry = expiryOf(r.ExpiresIn, now())
	if r.Scope != "" {
		t = t.WithExtra(map[string]any{"scope": r.Scope})
	}
	return t, nil
}

// errBadToken is a token that cannot go into an Authorization header.
var errBadToken = errors.New("the token endpoint answered a token that cannot be sent in an HTTP header (a space, line break or other byte that is not visible ASCII)")

// checkToken refuses an access token or token type that is not visible
// ASCII: RFC 6750's b64token and RFC 9110's token are both within it, and a
// line break in a header value is an injection (net/http would refuse to
// send it, with an error that says nothing useful). The error never quotes
// the token.
func checkToken(t *oauth2.Token) error {
	for _, s := range []string{t.AccessToken, t.TokenType} {
		for i := 0; i < len(s); i++ {
			if s[i] <= ' ' || s[i] >= 0x7f {
				return errBadToken
			}
		}
	}
	return nil
}

// expiryOf is when a token with this expires_in expires: zero (never, as
// in x/oauth2) when it is missing, not a number or not positive; at most
// 2^31-1 seconds away, as x/oauth2 clamps it, so that a huge value never
// overflows time.Duration into an expiry in the past (which would refresh
// on every use).
func expiryOf(expiresIn json.Number, now time.Time) time.Time {
	f, err := expiresIn.Float64()
	if math.IsInf(f, 1) { // 1e400: out of float64's range, still "long"
		f, err = math.MaxInt32, nil
	}
	if err != nil || !(f > 0) {
		return time.Time{}
	}
	f = min(f, math.MaxInt32)
	return now.Add(time.Duration(f) * time.Second)
}

// scrubURLError drops the URL from a *url.Error: a token endpoint's URL may
// carry a query the operator did not mean to show (it never carries our
// secrets, which go in the body, but keep the message short).
func scrubURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// scopesOf is a token's granted scopes (the token response's "scope"), or
// want when it has none.
func scopesOf(t *oauth2.Token, want []string) []string {
	if s, ok := t.Extra("scope").(string); ok && s != "" {
		return strings.Fields(s)
	}
	return want
}

// FailureError is a failure of the OAuth exchange itself: a token endpoint
// that redirects, a token response colibri cannot read, a token file it
// refuses, an authorization server other than oauth.issuer. Remote
// upstreams report it as kind "unauthorized", with Err as the cause.
type FailureError struct {
	Server string
	Err    error
}

func (e *FailureError) Error() string {
	return fmt.Sprintf("OAuth for server %s failed: %v", e.Server, e.Err)
}

func (e *FailureError) Unwrap() error { return e.Err }

// OAuthFailed reports that the OAuth exchange failed (see FailureError).
func (e *FailureError) OAuthFailed() bool { return true }

// IssuerError is discovery that named an authorization server other than
// the pinned oauth.issuer: nothing was sent to it.
type IssuerError struct {
	Pinned, Named string
}

func (e *IssuerError) Error() string {
	return fmt.Sprintf("the server's metadata names authorization server %s, but oauth.issuer is %s: refused, nothing was sent to it", clip(e.Named), e.Pinned)
}

// OAuthFailed reports that the OAuth exchange failed.
func (e *IssuerError) OAuthFailed() bool { return true }

// issuersEqual compares issuer identifiers less one trailing slash, as
// RFC 8414 section 3.3's validation tolerates.
func issuersEqual(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}
