// Package oauthtest is the OAuth test rig shared by internal/oauth's and
// host's tests: a real authorization server (oauth2-mock-server, from
// testdata/peers, run by testdata/peers/oauth-mock.mjs) and a real go-sdk
// MCP server behind go-sdk's bearer-token middleware, which serves its
// protected-resource metadata (RFC 9728) and answers 401 with a
// WWW-Authenticate challenge that points at it. It is for tests only: the
// shipped binary never imports it (deps_test.go checks).
//
//	m := oauthtest.StartMock(t)
//	p := oauthtest.NewProtected(t, m.Issuer, "")
//	… connect to p.URL with an OAuth handler …
//	ev := m.Next(t, "token") // what the token endpoint was asked
package oauthtest

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/colibri-mcp/colibri-mcp/internal/proc"
)

// Mock is a running oauth-mock.mjs.
type Mock struct {
	Issuer string
	events chan map[string]any
	marks  atomic.Int64
}

// peersDir is testdata/peers of the module the test runs in: the first
// folder up from the working directory (the package's) that holds go.mod.
func peersDir(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "peers")
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = up
	}
}

// StartMock runs the authorization server, or skips (fails in CI) when the
// peers are not installed. env is added to its environment (MOCK_DCR=1,
// MOCK_EXPIRES_IN=N: see oauth-mock.mjs).
func StartMock(t testing.TB, env ...string) *Mock {
	t.Helper()
	peers := peersDir(t)
	_, statErr := os.Stat(filepath.Join(peers, "node_modules", "oauth2-mock-server", "package.json"))
	_, nodeErr := exec.LookPath("node")
	if statErr != nil || nodeErr != nil {
		msg := "oauth2-mock-server is not installed (run `make peers`; needs node and npm)"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: in CI this is a failure, not a skip", msg)
		}
		t.Skip("SKIPPING real-peer test: " + msg)
	}
	cmd := exec.Command("node", "oauth-mock.mjs")
	cmd.Dir = peers
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Started through proc, as a child of the test's own: a Host closing
	// in a test whose binary is the reaper of orphans (host's) must not
	// take it for one and kill it.
	if err := proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the script exits when its stdin closes
		done := make(chan struct{})
		go func() { cmd.Wait(); proc.Reaped(cmd.Process); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	m := &Mock{events: make(chan map[string]any, 100)}
	ready := make(chan string, 1)
	gone := make(chan struct{}) // the script closed its stdout: it exited
	go func() {
		defer close(gone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			if ev["event"] == "ready" {
				ready <- ev["issuer"].(string)
				continue
			}
			m.events <- ev
		}
	}()
	select {
	case m.Issuer = <-ready:
	case <-gone:
		t.Fatal("oauth-mock.mjs exited before it was ready (its stderr is above)")
	case <-time.After(30 * time.Second):
		t.Fatal("oauth-mock.mjs did not start within 30 s")
	}
	return m
}

// Next is the next event of the given kind ("token", "register"), within
// a deadline.
func (m *Mock) Next(t testing.TB, kind string) map[string]any {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-m.events:
			if ev["event"] == kind {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %q event from the authorization server within 10 s", kind)
		}
	}
}

// None asserts that the server got no request of that kind since the
// events last read. The events come through a pipe and a goroutine, so
// what is queued now may lag behind what the server did: None asks the
// server for a mark and reads up to it (the server writes each event
// before the answer it describes, so every request answered before the
// mark has its event ahead of it).
func (m *Mock) None(t testing.TB, kind string) {
	t.Helper()
	id := strconv.FormatInt(m.marks.Add(1), 10)
	resp, err := http.Post(m.Issuer+"/test/mark?id="+id, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-m.events:
			switch {
			case ev["event"] == kind:
				t.Fatalf("unexpected %s event: %v", kind, ev)
			case ev["event"] == "mark" && ev["id"] == id:
				return
			}
		case <-deadline:
			t.Fatal("the authorization server's mark did not come back within 10 s")
		}
	}
}

// RevokeRefreshTokens makes the server refuse every refresh token it gave.
func (m *Mock) RevokeRefreshTokens(t testing.TB) {
	t.Helper()
	resp, err := http.Post(m.Issuer+"/test/revoke", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// Protected is an MCP server that accepts only the mock's tokens for its
// own resource. Its one tool, whoami, answers the token's scopes.
type Protected struct {
	URL      string // the MCP endpoint
	Resource string // what a token's aud must be

	mu      sync.Mutex
	seen    []string // access tokens accepted, in order
	refused map[string]bool
	denied  int
}

// Refuse makes the server answer 401 to token from now on.
func (p *Protected) Refuse(token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused[token] = true
}

// Accepted is the access tokens the server accepted, one per request.
func (p *Protected) Accepted() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// Denied is how many requests the server refused for their token (a
// request with no token at all is not counted).
func (p *Protected) Denied() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.denied
}

// NewProtected serves /mcp behind bearer tokens from issuer. resource is
// the audience tokens must carry; "" means the MCP endpoint's URL.
func NewProtected(t testing.TB, issuer, resource string) *Protected {
	t.Helper()
	p := &Protected{refused: map[string]bool{}}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.URL = srv.URL + "/mcp"
	p.Resource = resource
	if p.Resource == "" {
		p.Resource = p.URL
	}
	prmURL := srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:             p.URL,
		AuthorizationServers: []string{issuer},
		ScopesSupported:      []string{"read", "write"},
	}))
	server := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		ti := req.Extra.TokenInfo
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(ti.Scopes, " ")}}}, nil, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		c, err := jwtClaims(token)
		switch {
		case err != nil:
		case c.Iss != issuer:
			err = fmt.Errorf("issuer %q", c.Iss)
		case c.Aud != p.Resource:
			err = fmt.Errorf("audience %q, want %q", c.Aud, p.Resource)
		case p.refused[token]:
			err = fmt.Errorf("revoked")
		}
		if err != nil {
			p.denied++
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		p.seen = append(p.seen, token)
		return &auth.TokenInfo{Scopes: strings.Fields(c.Scope), Expiration: time.Unix(c.Exp, 0)}, nil
	}
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL})(handler))
	return p
}

// Claims is what the tests read of a mock's token.
type Claims struct {
	Iss   string `json:"iss"`
	Aud   string `json:"aud"`
	Scope string `json:"scope"`
	Exp   int64  `json:"exp"`
}

// jwtClaims reads a JWT's payload (the signature is the mock's business:
// the issuer check is enough to tell its tokens from anything else here).
func jwtClaims(token string) (*Claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var c Claims
	return &c, json.Unmarshal(raw, &c)
}

// ClaimsOf reads a token the mock issued, failing the test when it cannot.
func ClaimsOf(t testing.TB, token string) *Claims {
	t.Helper()
	c, err := jwtClaims(token)
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	return c
}

// CallWhoami connects to url with h and calls whoami: the granted scopes.
func CallWhoami(t testing.TB, url string, h auth.OAuthHandler) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, OAuthHandler: h, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("whoami: isError: %v", res.Content)
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// Follow plays the person with a browser, as an oauth.LoginOptions.Visit:
// it opens the authorization URL; the mock authorizes at once and redirects
// to the login's loopback listener, whose page must say the login is done.
func Follow(ctx context.Context, authURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "is complete") {
		return errors.New("the redirect page said: " + string(body))
	}
	return nil
}
