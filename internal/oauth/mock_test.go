package oauth

// The test rig: a real authorization server (oauth2-mock-server, from
// testdata/peers, run by testdata/peers/oauth-mock.mjs) and a real go-sdk
// MCP server behind go-sdk's bearer-token middleware, which serves its
// protected-resource metadata (RFC 9728) and answers 401 with a
// WWW-Authenticate challenge that points at it.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// mockServer is a running oauth-mock.mjs.
type mockServer struct {
	issuer string
	events chan map[string]any
}

// startMock runs the authorization server, or skips (fails in CI) when the
// peers are not installed.
func startMock(t *testing.T, env ...string) *mockServer {
	t.Helper()
	peers, _ := filepath.Abs("../../testdata/peers")
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
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the script exits when its stdin closes
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	m := &mockServer{events: make(chan map[string]any, 100)}
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
	case m.issuer = <-ready:
	case <-gone:
		t.Fatal("oauth-mock.mjs exited before it was ready (its stderr is above)")
	case <-time.After(30 * time.Second):
		t.Fatal("oauth-mock.mjs did not start within 30 s")
	}
	return m
}

// next is the next event of the given kind, within a deadline.
func (m *mockServer) next(t *testing.T, kind string) map[string]any {
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

// none asserts that no event of that kind is pending (events are written
// before the answer they describe, so a request that completed has its
// event queued already).
func (m *mockServer) none(t *testing.T, kind string) {
	t.Helper()
	for {
		select {
		case ev := <-m.events:
			if ev["event"] == kind {
				t.Fatalf("unexpected %s event: %v", kind, ev)
			}
		default:
			return
		}
	}
}

func (m *mockServer) revokeRefreshTokens(t *testing.T) {
	t.Helper()
	resp, err := http.Post(m.issuer+"/test/revoke", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// protected is an MCP server that accepts only the mock's tokens for its
// own resource.
type protected struct {
	URL      string // the MCP endpoint
	resource string // what a token's aud must be

	mu      sync.Mutex
	seen    []string // access tokens accepted, in order
	refused map[string]bool
}

func (p *protected) refuse(token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused[token] = true
}

func (p *protected) accepted() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// newProtected serves /mcp behind bearer tokens from issuer. resource is
// the audience tokens must carry; "" means the MCP endpoint's URL.
func newProtected(t *testing.T, issuer, resource string) *protected {
	t.Helper()
	p := &protected{refused: map[string]bool{}}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.URL = srv.URL + "/mcp"
	p.resource = resource
	if p.resource == "" {
		p.resource = p.URL
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
		claims, err := jwtClaims(token)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		switch {
		case claims.Iss != issuer:
			return nil, fmt.Errorf("%w: issuer %q", auth.ErrInvalidToken, claims.Iss)
		case claims.Aud != p.resource:
			return nil, fmt.Errorf("%w: audience %q, want %q", auth.ErrInvalidToken, claims.Aud, p.resource)
		case p.refused[token]:
			return nil, fmt.Errorf("%w: revoked", auth.ErrInvalidToken)
		}
		p.seen = append(p.seen, token)
		return &auth.TokenInfo{Scopes: strings.Fields(claims.Scope), Expiration: time.Unix(claims.Exp, 0)}, nil
	}
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL})(handler))
	return p
}

type claims struct {
	Iss   string `json:"iss"`
	Aud   string `json:"aud"`
	Scope string `json:"scope"`
	Exp   int64  `json:"exp"`
}

// jwtClaims reads a JWT's payload (the signature is the mock's business:
// the issuer check is enough to tell its tokens from anything else here).
func jwtClaims(token string) (*claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var c claims
	return &c, json.Unmarshal(raw, &c)
}

// callWhoami connects to url with h and calls whoami: the granted scopes.
func callWhoami(t *testing.T, url string, h auth.OAuthHandler) (string, error) {
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
