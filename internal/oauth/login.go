package oauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// LoginOptions are [Login]'s.
type LoginOptions struct {
	Options
	// HTTPClient reaches the MCP server and its authorization server; nil
	// means a plain one.
	HTTPClient *http.Client
	// Stderr shows the authorization URL and what happens; nil discards.
	Stderr io.Writer
	// OpenBrowser opens the authorization URL with Open (--open); otherwise
	// the URL is only printed, for the person to open where they like.
	OpenBrowser bool
	// Open opens a URL in a browser; nil means xdg-open (open on macOS).
	Open func(url string) error
	// Visit, when set, is given the authorization URL as well: the tests
	// follow it with an HTTP client instead of a person.
	Visit func(ctx context.Context, authURL string) error
	// Wait bounds the wait for the browser's redirect; zero means 5 minutes.
	Wait time.Duration

	// browserOnly skips approveDirect (tests of the browser's way with an
	// authorization server that approves at once).
	browserOnly bool
}

// DefaultLoginWait is how long `auth login` waits for the redirect.
const DefaultLoginWait = 5 * time.Minute

// callbackPath is the loopback redirect's path.
const callbackPath = "/callback"

// Login runs the authorization code flow for srv with go-sdk's
// AuthorizationCodeHandler (discovery, PKCE, RFC 8707 resource, dynamic
// client registration or the registry's client_id), with a loopback
// redirect on 127.0.0.1 (RFC 8252 section 7.3) at a random port, and saves
// the tokens (mode 0600). It returns the new status.
func Login(ctx context.Context, srv *registry.Server, opts LoginOptions) (*Status, error) {
	opts.fill()
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Wait <= 0 {
		opts.Wait = DefaultLoginWait
	}
	if opts.Open == nil {
		opts.Open = openBrowser
	}
	if err := needsLogin(srv); err != nil {
		return nil, err
	}
	o := srv.OAuth
	path, err := TokenPath(srv, opts.Dir, opts.Getenv)
	if err != nil {
		return nil, err
	}
	secret, err := o.ExpandClientSecret(opts.Getenv)
	if err != nil {
		return nil, err
	}
	hc := httpClient(srv, opts.HTTPClient, opts.Timeout)

	// The loopback listener, before the authorization URL exists.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the redirect on 127.0.0.1: %w", err)
	}
	redirect := fmt.Sprintf("http://%s%s", ln.Addr(), callbackPath)
	results := make(chan callback, 1)
	state := &wantState{}
	cb := &http.Server{Handler: callbackHandler(srv.Name, state, results), ReadHeaderTimeout: 10 * time.Second}
	go cb.Serve(ln)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = cb.Shutdown(sctx) // lets the browser's page be written
	}()

	var (
		mu       sync.Mutex
		resource string
		gotCfg   *oauth2.Config
		gotTok   *oauth2.Token
	)
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         redirect,
		RequestRefreshToken: true,
		Client:              hc,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if u, err := url.Parse(args.URL); err == nil {
				mu.Lock()
				resource = u.Query().Get("resource")
				mu.Unlock()
				state.set(u.Query().Get("state"))
			}
			if !opts.browserOnly {
				if res, ok := approveDirect(ctx, hc, args.URL, redirect, state); ok {
					fmt.Fprintf(opts.Stderr, "The authorization server approved the login to %s without a browser.\n", srv.Name)
					return authResult(res)
				}
			}
			return fetchCode(ctx, srv.Name, args.URL, redirect, results, &opts)
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			mu.Lock()
			gotCfg, gotTok = c, t
			mu.Unlock()
			return oauth2.StaticTokenSource(t), nil
		},
	}
	// The registry's scopes, when it names any, replace what the server's
	// metadata offers; the scopes its challenge names (a 401's, or a 403
	// insufficient_scope's: what a step-up needs) are asked for too.
	var challenged []string
	cfg.ScopeFilter = func(discovered []string) []string {
		if len(o.Scopes) == 0 {
			return unionScopes(discovered, challenged)
		}
		return unionScopes(o.Scopes, challenged)
	}
	if o.ClientID != "" {
		// go-sdk refuses an authorization server other than Issuer
		// before it sends the client anything (SEP-2352).
		pre := &oauthex.ClientCredentials{ClientID: o.ClientID, Issuer: o.Issuer}
		if secret != "" {
			pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
		cfg.PreregisteredClient = pre
	} else {
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:            []string{redirect},
				ClientName:              "colibri-mcp",
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				TokenEndpointAuthMethod: "none",
				Scope:                   strings.Join(o.Scopes, " "),
			},
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("login to %s: %w", srv.Name, err)
	}

	held, stepUp := "", []string(nil)
	if saved, err := Load(path); err == nil && saved != nil {
		held = saved.AccessToken // a step-up: the server names the scopes it lacks
		stepUp = saved.StepUp    // or named them to a call since the last login
	}
	req, resp, err := challenge(ctx, hc, srv.URL, held)
	if err != nil {
		return nil, fmt.Errorf("login to %s: %w", srv.Name, err)
	}
	if o.Issuer != "" {
		// Checked here, before go-sdk asks the authorization server
		// anything (it would fetch a foreign issuer's metadata before its
		// own check of a pre-registered client, and a dynamic client has
		// no issuer for it to check at all).
		metadataURL, _ := challengeOf(resp)
		if _, err := discover(ctx, hc, srv.URL, metadataURL, o.Issuer); err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("login to %s: %w", srv.Name, err)
		}
	}
	challenged = unionScopes(challengeScopes(resp), stepUp)
	if err := h.Authorize(ctx, req, resp); err != nil {
		return nil, fmt.Errorf("login to %s: %w", srv.Name, safe(err, secret))
	}
	mu.Lock()
	c, t, res := gotCfg, gotTok, resource
	mu.Unlock()
	if t == nil || c == nil {
		return nil, fmt.Errorf("login to %s: the authorization server issued no token", srv.Name)
	}
	if err := checkToken(t); err != nil {
		return nil, fmt.Errorf("login to %s: %w", srv.Name, err)
	}
	s := &Saved{
		Server:        srv.Name,
		URL:           srv.URL,
		TokenType:     t.TokenType,
		AccessToken:   t.AccessToken,
		RefreshToken:  t.RefreshToken,
		Expiry:        t.Expiry.UTC(),
		Scopes:        scopesOf(t, c.Scopes),
		TokenEndpoint: c.Endpoint.TokenURL,
		AuthStyle:     styleName(c.Endpoint.AuthStyle),
		ClientID:      c.ClientID,
		DynamicClient: o.ClientID == "",
		Resource:      res,
		SavedAt:       opts.Now().UTC(),
	}
	if s.DynamicClient {
		s.ClientSecret = c.ClientSecret
	}
	if err := Save(path, s); err != nil {
		return nil, fmt.Errorf("login to %s: %w", srv.Name, err)
	}
	opts.Logger.Info("oauth: logged in", "server", srv.Name, "token_file", path, "expiry", s.Expiry)
	return statusOf(srv, path, s, opts.Now()), nil
}

// challenge asks the MCP server for what it wants, with the request it
// challenges: an MCP POST (initialize), with the token colibri holds if it
// holds one. Its 401 (no or a bad token) or 403 (insufficient_scope) carries
// the WWW-Authenticate challenge: the metadata's URL, the scopes. (A GET,
// which many servers answer 405 without a challenge, found neither.) A
// server that does not refuse it gets the well-known discovery anyway, as if
// it had answered a bare 401.
func challenge(ctx context.Context, hc *http.Client, serverURL, token string) (*http.Request, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(loginProbe))
	if err != nil {
		return nil, nil, fmt.Errorf("server url: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("reaching the server: %w", err)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return req, resp, nil
	}
	resp.Body.Close() // a 200 here may be an endless event stream
	return req, &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody}, nil
}

// callback is what the loopback redirect brought.
type callback struct {
	code, state, iss string
	err              error
}

// wantState is the state parameter of the authorization URL in use.
type wantState struct {
	mu    sync.Mutex
	state string
}

func (w *wantState) set(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state = s
}

// matches: got is the state of the authorization URL (and there is one).
func (w *wantState) matches(got string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state != "" && subtle.ConstantTimeCompare([]byte(w.state), []byte(got)) == 1
}

// callbackHandler takes the first redirect to callbackPath that carries the
// state of the authorization URL, and answers the browser with a short
// page. A request with another state (or none) is refused and the wait goes
// on: any local process, or a web page in the browser, can reach the
// listener, and must not be able to end the login with a forged code or
// error (RFC 6749 section 10.12; RFC 8252 section 8.2).
func callbackHandler(server string, want *wantState, results chan<- callback) http.Handler {
	var once sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+callbackPath, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if !want.matches(q.Get("state")) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "colibri-mcp: this redirect does not belong to the login to %s in progress (its state parameter is wrong); ignored.\n", server)
			return
		}
		res := redirectResult(q)
		if res.err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "colibri-mcp: the login to %s failed: %v\n", server, res.err)
		} else {
			fmt.Fprintf(w, "colibri-mcp: the login to %s is complete. You may close this page.\n", server)
		}
		once.Do(func() { results <- res })
	})
	return mux
}

// fetchCode is the browser step: print the URL, open a browser if asked,
// and wait for the redirect.
func fetchCode(ctx context.Context, server, authURL, redirect string, results <-chan callback, opts *LoginOptions) (*auth.AuthorizationResult, error) {
	fmt.Fprintf(opts.Stderr, "To log in to %s, open this URL in a browser:\n\n  %s\n\nWaiting up to %s for the redirect to %s …\n", server, authURL, opts.Wait, redirect)
	if opts.OpenBrowser {
		if err := opts.Open(authURL); err != nil {
			fmt.Fprintf(opts.Stderr, "Could not open a browser (%v): open the URL yourself.\n", err)
		}
	}
	visitErr := make(chan error, 1)
	if opts.Visit != nil {
		go func() { visitErr <- opts.Visit(ctx, authURL) }()
	}
	timer := time.NewTimer(opts.Wait)
	defer timer.Stop()
	for {
		select {
		case r := <-results:
			return authResult(r)
		case err := <-visitErr:
			if err != nil {
				return nil, fmt.Errorf("visiting the authorization URL: %w", err)
			}
		case <-timer.C:
			return nil, fmt.Errorf("no redirect came back within %s (was the URL opened, and the login finished?)", opts.Wait)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// authResult is a redirect's result for go-sdk.
func authResult(r callback) (*auth.AuthorizationResult, error) {
	if r.err != nil {
		return nil, r.err
	}
	return &auth.AuthorizationResult{Code: r.code, State: r.state, Iss: r.iss}, nil
}

// safe rewrites an error of the login flow whose text could quote a token
// endpoint's answer (x/oauth2's RetrieveError quotes the whole body, and
// the server's own words may quote the client secret).
func safe(err error, secret string) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return fmt.Errorf("exchanging the authorization code: %w", tokenError(re, secret))
	}
	return err
}

func styleName(s oauth2.AuthStyle) string {
	switch s {
	case oauth2.AuthStyleInParams:
		return "params"
	case oauth2.AuthStyleInHeader:
		return "header"
	}
	return ""
}

// needsLogin refuses a server that `auth` cannot log in to.
func needsLogin(srv *registry.Server) error {
	switch {
	case srv.URL == "":
		return &UsageError{fmt.Sprintf("server %q is not a remote server (no url): there is nothing to log in to", srv.Name)}
	case srv.OAuth == nil:
		return &UsageError{fmt.Sprintf("server %q has no oauth entry: add \"oauth\": {\"grant\": \"authorization_code\"} to it in the registry first", srv.Name)}
	case srv.OAuth.Grant == registry.GrantClientCredentials:
		return &UsageError{fmt.Sprintf("server %q uses the client_credentials grant: colibri gets its tokens unattended, with no login", srv.Name)}
	case srv.OAuth.Grant != registry.GrantAuthorizationCode:
		return &UsageError{fmt.Sprintf("server %q: oauth.grant %q is not authorization_code", srv.Name, srv.OAuth.Grant)}
	}
	return nil
}

// UsageError is a server that the auth commands do not apply to.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// Status is what `auth status` shows: never a token.
type Status struct {
	Server    string     `json:"server"`
	TokenFile string     `json:"token_file"`
	LoggedIn  bool       `json:"logged_in"`
	Problem   string     `json:"problem,omitempty"` // why not, or why the file cannot be used
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Expired   bool       `json:"expired"`
	// Refreshable: a refresh token is saved.
	Refreshable bool       `json:"refreshable"`
	Scopes      []string   `json:"scopes,omitempty"`
	ClientID    string     `json:"client_id,omitempty"`
	Dynamic     bool       `json:"dynamic_client"`
	SavedAt     *time.Time `json:"saved_at,omitempty"`
}

// GetStatus reads srv's token file (without the network).
func GetStatus(srv *registry.Server, opts Options) (*Status, error) {
	opts.fill()
	if err := needsLogin(srv); err != nil {
		return nil, err
	}
	path, err := TokenPath(srv, opts.Dir, opts.Getenv)
	if err != nil {
		return nil, err
	}
	s, err := Load(path)
	switch {
	case errors.Is(err, ErrNoToken):
		return &Status{Server: srv.Name, TokenFile: path, Problem: "no token file"}, nil
	case err != nil:
		return &Status{Server: srv.Name, TokenFile: path, Problem: err.Error()}, nil
	}
	return statusOf(srv, path, s, opts.Now()), nil
}

func statusOf(srv *registry.Server, path string, s *Saved, now time.Time) *Status {
	st := &Status{
		Server: srv.Name, TokenFile: path,
		Refreshable: s.RefreshToken != "",
		Scopes:      s.Scopes,
		ClientID:    s.ClientID,
		Dynamic:     s.DynamicClient,
	}
	if !s.Expiry.IsZero() {
		e := s.Expiry
		st.ExpiresAt = &e
		st.Expired = !now.Before(e)
	}
	if !s.SavedAt.IsZero() {
		t := s.SavedAt
		st.SavedAt = &t
	}
	st.LoggedIn = s.AccessToken != "" && (!st.Expired || st.Refreshable)
	if !st.LoggedIn {
		st.Problem = "the access token expired and there is no refresh token"
	}
	return st
}

// Logout deletes srv's token file. It returns the file's path and whether
// there was one.
func Logout(srv *registry.Server, opts Options) (path string, removed bool, err error) {
	opts.fill()
	if err := needsLogin(srv); err != nil {
		return "", false, err
	}
	path, err = TokenPath(srv, opts.Dir, opts.Getenv)
	if err != nil {
		return "", false, err
	}
	removed, err = Remove(path)
	return path, removed, err
}

// loginProbe is the MCP request auth login sends for the server's challenge.
const loginProbe = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"colibri-mcp","version":"auth-login"}}}`

// unionScopes is a's scopes, then b's that a lacks.
func unionScopes(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// challengeScopes is the scope a 401 or 403 Bearer challenge names.
func challengeScopes(resp *http.Response) []string {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil
	}
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["scope"] != "" {
			return strings.Fields(c.Params["scope"])
		}
	}
	return nil
}
