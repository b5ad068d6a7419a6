package oauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// clientCredentials is the unattended grant (RFC 6749 section 4.4). go-sdk's
// extauth.ClientCredentialsHandler would fit but for three things: it sends
// no RFC 8707 resource, it ignores configured scopes, and its token source
// keeps the context of the request that first met a 401, so that every
// later fetch fails once that request is over. Tokens live in memory only:
// a new one costs one request, and none is left at rest.
type clientCredentials struct {
	server, url string
	cfg         clientcredentials.Config // TokenURL, AuthStyle filled by discovery
	resource    string                   // oauth.resource; "" means the discovered one
	issuer      string                   // oauth.issuer: the only authorization server allowed
	hc          *http.Client
	opts        Options

	mu sync.Mutex
	ts oauth2.TokenSource // nil until discovery ran
}

func newClientCredentials(srv *registry.Server, hc *http.Client, opts Options) (*clientCredentials, error) {
	o := srv.OAuth
	if o.ClientID == "" {
		return nil, fmt.Errorf("oauth: the client_credentials grant needs client_id")
	}
	secret, err := o.ExpandClientSecret(opts.Getenv)
	if err != nil {
		return nil, err
	}
	if secret == "" {
		return nil, fmt.Errorf("oauth: the client_credentials grant needs client_secret")
	}
	return &clientCredentials{
		server: srv.Name, url: srv.URL,
		cfg:      clientcredentials.Config{ClientID: o.ClientID, ClientSecret: secret, Scopes: o.Scopes},
		resource: o.Resource,
		issuer:   o.Issuer,
		hc:       hc,
		opts:     opts,
	}, nil
}

// TokenSource discovers the token endpoint the first time, then returns a
// source that fetches a token when it has none or its token expires within
// EarlyRefresh.
func (h *clientCredentials) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ts == nil {
		if err := h.setup(ctx, ""); err != nil {
			return nil, err
		}
	}
	return h.ts, nil
}

// Authorize runs when the server refused a request (401, or 403): discover
// again (the challenge may name the metadata), fetch a new token, and let
// the transport retry once. A 403 other than insufficient_scope is not ours
// to fix: the retry meets it again and the caller sees it.
func (h *clientCredentials) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	defer io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	metadataURL, code := challengeOf(resp)
	if resp.StatusCode == http.StatusForbidden && code != "insufficient_scope" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.setup(ctx, metadataURL); err != nil {
		return err
	}
	_, err := h.ts.Token()
	if err != nil {
		h.ts = nil
		return &FailureError{Server: h.server, Err: err}
	}
	return nil
}

// setup discovers the token endpoint and makes a fresh token source (the
// old token, refused or not, is dropped). h.mu is held.
func (h *clientCredentials) setup(ctx context.Context, metadataURL string) error {
	ctx, cancel := context.WithTimeout(ctx, h.opts.Timeout)
	defer cancel()
	ep, err := discover(ctx, h.hc, h.url, metadataURL, h.issuer)
	if err != nil {
		return &FailureError{Server: h.server, Err: fmt.Errorf("discovering its token endpoint: %w", err)}
	}
	cfg := h.cfg
	cfg.TokenURL, cfg.AuthStyle = ep.tokenURL, ep.authStyle
	resource := h.resource
	if resource == "" {
		resource = ep.resource
	}
	if resource != "" {
		cfg.EndpointParams = map[string][]string{"resource": {resource}}
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = ep.scopes
	}
	src := &ccSource{cfg: &cfg, h: h}
	h.ts = oauth2.ReuseTokenSourceWithExpiry(nil, src, EarlyRefresh)
	return nil
}

// ccSource fetches a new token on every call; ReuseTokenSourceWithExpiry
// in front of it decides when. Each fetch has its own deadline: the
// transport calls Token without a context.
type ccSource struct {
	cfg *clientcredentials.Config
	h   *clientCredentials
}

func (s *ccSource) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.h.opts.Timeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, noRedirects(s.h.hc))
	t, err := s.cfg.Token(ctx)
	if err == nil {
		err = checkToken(t)
	}
	if err != nil {
		err = tokenError(err, s.cfg.ClientSecret)
		s.h.opts.Logger.Warn("oauth: fetching a client_credentials token failed", "server", s.h.server, "err", err)
		return nil, &FailureError{Server: s.h.server, Err: fmt.Errorf("fetching a client_credentials token: %w", err)}
	}
	s.h.opts.Logger.Debug("oauth: fetched a client_credentials token", "server", s.h.server, "expiry", t.Expiry)
	return t, nil
}
