package oauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// authCode serves the tokens that `colibri-mcp auth login` saved. It is an
// oauth2.TokenSource itself: each Token call returns the saved access
// token, or refreshes it (saving the new tokens, the rotated refresh token
// first of all) when it expires within EarlyRefresh. It never starts a
// login: without a usable token it fails with *LoginRequiredError.
type authCode struct {
	server string
	path   string
	secret string // the registry's client_secret (pre-registered client), expanded
	hc     *http.Client
	opts   Options

	mu    sync.Mutex
	saved *Saved // nil until read; read again when absent or stale

	onLockWait func() // tests: called when another process holds the lock
}

func newAuthCode(srv *registry.Server, hc *http.Client, opts Options) (*authCode, error) {
	path, err := TokenPath(srv, opts.Dir, opts.Getenv)
	if err != nil {
		return nil, err
	}
	secret, err := srv.OAuth.ExpandClientSecret(opts.Getenv)
	if err != nil {
		return nil, err
	}
	return &authCode{server: srv.Name, path: path, secret: secret, hc: hc, opts: opts}, nil
}

func (h *authCode) TokenSource(context.Context) (oauth2.TokenSource, error) { return h, nil }

// Authorize runs when the server refused the token. A 401 may mean the
// token was revoked or expired early: refresh it once, and let the
// transport retry. A 403 for insufficient_scope needs a new login (with
// the scopes in the registry); any other 403 is not ours to fix: the retry
// meets it again and the caller sees it.
func (h *authCode) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	defer io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_, code := challengeOf(resp)
	if resp.StatusCode == http.StatusForbidden {
		if code == "insufficient_scope" {
			want := challengeScopes(resp)
			h.rememberStepUp(want)
			return &LoginRequiredError{Server: h.server, Reason: "the server wants scopes the saved token does not have: " + clip(strings.Join(want, " "))}
		}
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.token(true)
	return err
}

// rememberStepUp keeps the scopes a 403 insufficient_scope named in the
// token file (Saved.StepUp), for the next `auth login` to ask for: that
// login's own probe (an initialize) may well be accepted with the scopes
// the token has, and would not learn them. A failure is logged: the login
// is needed all the same.
func (h *authCode) rememberStepUp(want []string) {
	want = scopeTokens(want)
	if len(want) == 0 {
		return
	}
	unlock, err := lockFile(h.path+".lock", time.Now().Add(h.opts.Timeout), h.onLockWait)
	if err == nil {
		defer unlock()
		var s *Saved
		if s, err = Load(h.path); err == nil {
			s.StepUp = unionScopes(s.StepUp, want)
			if len(s.StepUp) > maxStepUpScopes { // the newest are what the server wants now
				s.StepUp = s.StepUp[len(s.StepUp)-maxStepUpScopes:]
			}
			err = Save(h.path, s)
		}
	}
	if err != nil {
		h.opts.Logger.Warn("oauth: could not note the scopes the server asked for", "server", h.server, "err", err)
	}
}

// Bounds on what a server's 403 can leave in the token file.
const (
	maxStepUpScopes = 32
	maxScopeLen     = 256
)

// scopeTokens keeps the scopes that are RFC 6749 scope-tokens (visible
// ASCII but '"' and '\\') of at most maxScopeLen bytes, the last
// maxStepUpScopes of them.
func scopeTokens(scopes []string) []string {
	var out []string
	for _, s := range scopes {
		ok := s != "" && len(s) <= maxScopeLen
		for i := 0; ok && i < len(s); i++ {
			ok = s[i] > ' ' && s[i] < 0x7f && s[i] != '"' && s[i] != '\\'
		}
		if ok {
			out = append(out, s)
		}
	}
	if len(out) > maxStepUpScopes {
		out = out[len(out)-maxStepUpScopes:]
	}
	return out
}

// Token returns a valid access token, refreshed when needed.
func (h *authCode) Token() (*oauth2.Token, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.token(false)
}

// token is Token; force refreshes even a token that looks valid (the
// server refused it). h.mu is held.
func (h *authCode) token(force bool) (*oauth2.Token, error) {
	now := h.opts.Now()
	if h.saved == nil || force || expiring(h.saved, now) {
		// Another process (`auth login`, a second colibri) may have
		// written newer tokens: a rotated refresh token, or a login
		// after a logout. Never refresh with an old one.
		s, err := Load(h.path)
		switch {
		case errors.Is(err, ErrNoToken):
			h.saved = nil
			return nil, &LoginRequiredError{Server: h.server, Reason: "no saved token (never logged in, or logged out)"}
		case err != nil:
			return nil, &FailureError{Server: h.server, Err: err}
		}
		if h.saved == nil || s.RefreshToken != h.saved.RefreshToken || s.AccessToken != h.saved.AccessToken {
			force = false // newer tokens than ours: try them first
		}
		h.saved = s
	}
	if !force && !expiring(h.saved, now) {
		return toToken(h.saved), nil
	}
	if h.saved.RefreshToken == "" {
		return nil, &LoginRequiredError{Server: h.server, Reason: "the token expired and there is no refresh token"}
	}
	// Refresh under the token file's lock, and read the file again once
	// it is ours: another process may have refreshed while we waited, and
	// with rotation our refresh token is then spent (a server that
	// detects reuse would even revoke the whole grant).
	unlock, err := lockFile(h.path+".lock", time.Now().Add(h.opts.Timeout), h.onLockWait)
	if err != nil {
		return nil, &FailureError{Server: h.server, Err: err}
	}
	defer unlock()
	s, err := Load(h.path)
	switch {
	case errors.Is(err, ErrNoToken):
		h.saved = nil
		return nil, &LoginRequiredError{Server: h.server, Reason: "no saved token (logged out)"}
	case err != nil:
		return nil, &FailureError{Server: h.server, Err: err}
	}
	if s.AccessToken != h.saved.AccessToken && !expiring(s, now) {
		h.saved = s // refreshed by the other process
		return toToken(s), nil
	}
	h.saved = s
	if h.saved.RefreshToken == "" {
		return nil, &LoginRequiredError{Server: h.server, Reason: "the token expired and there is no refresh token"}
	}
	secret := h.secret
	if h.saved.DynamicClient {
		secret = h.saved.ClientSecret
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.Timeout)
	defer cancel()
	t, err := refresh(ctx, h.hc, h.saved, secret, h.opts.Now)
	if err != nil {
		var te *TokenError
		if errors.As(err, &te) && (te.Code == "invalid_grant" || te.Code == "invalid_client" || te.Code == "unauthorized_client") {
			h.opts.Logger.Warn("oauth: the refresh token was refused; a new login is needed", "server", h.server, "err", err)
			return nil, &LoginRequiredError{Server: h.server, Reason: "the refresh token was refused: " + err.Error()}
		}
		return nil, &FailureError{Server: h.server, Err: err}
	}
	next := *h.saved
	next.AccessToken, next.Expiry, next.SavedAt = t.AccessToken, t.Expiry, h.opts.Now().UTC()
	if t.TokenType != "" {
		next.TokenType = t.TokenType
	}
	if t.RefreshToken != "" { // rotated (OAuth 2.1 section 4.3.1): the old one is spent
		next.RefreshToken = t.RefreshToken
	}
	next.Scopes = scopesOf(t, next.Scopes)
	if err := Save(h.path, &next); err != nil {
		// The new tokens work for this process; a later one will need a
		// login if the server rotated the refresh token. Say so.
		h.opts.Logger.Error("oauth: saving the refreshed tokens failed", "server", h.server, "path", h.path, "err", err)
	}
	h.saved = &next
	h.opts.Logger.Info("oauth: refreshed the access token", "server", h.server, "expiry", next.Expiry, "rotated", t.RefreshToken != "")
	return toToken(&next), nil
}

// expiring: the token expires within EarlyRefresh (a zero expiry never
// expires, as in x/oauth2), or there is none.
func expiring(s *Saved, now time.Time) bool {
	return s.AccessToken == "" || !s.Expiry.IsZero() && !now.Add(EarlyRefresh).Before(s.Expiry)
}

func toToken(s *Saved) *oauth2.Token {
	typ := s.TokenType
	if typ == "" {
		typ = "Bearer"
	}
	return &oauth2.Token{AccessToken: s.AccessToken, TokenType: typ, Expiry: s.Expiry}
}
