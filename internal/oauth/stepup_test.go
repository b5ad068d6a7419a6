package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/colibri-mcp/colibri-mcp/internal/oauthtest"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Step-up after the login: a server that accepts initialize without a
// token and tools/list with "read", but wants "read write" for tools/call
// (403 insufficient_scope, as the conformance suite's scope-step-up does).
// The call fails "needs a login", and the login that follows asks for
// write too, although its own probe (an initialize) is accepted as it is
// and names no scope: the handler noted the 403's scopes in the token file.
func TestStepUpAfterACall(t *testing.T) {
	m := oauthtest.StartMock(t, "MOCK_DCR=1")
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"
	prm := srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: url, AuthorizationServers: []string{m.Issuer}, ScopesSupported: []string{"read"}}))
	server := mcp.NewServer(&mcp.Implementation{Name: "stepup", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil, nil
	})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct{ Method string }
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "initialize" || strings.HasPrefix(msg.Method, "notifications/") {
			mcpHandler.ServeHTTP(w, r)
			return
		}
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if tok == "" {
			w.Header().Set("WWW-Authenticate", `Bearer scope="read", resource_metadata="`+prm+`"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		need := "read"
		if msg.Method == "tools/call" {
			need = "read write"
		}
		has := " " + oauthtest.ClaimsOf(t, tok).Scope + " "
		for _, s := range strings.Fields(need) {
			if !strings.Contains(has, " "+s+" ") {
				w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+need+`", resource_metadata="`+prm+`"`)
				http.Error(w, "insufficient scope", http.StatusForbidden)
				return
			}
		}
		mcpHandler.ServeHTTP(w, r)
	})
	dir := filepath.Join(t.TempDir(), "oauth")
	s := &registry.Server{Name: "remote", URL: url, OAuth: &registry.OAuth{Grant: registry.GrantAuthorizationCode}}

	st, _ := login(t, s, dir)
	if sameScopes(strings.Join(st.Scopes, " "), "read write") {
		t.Fatalf("the first login got %v already: the test proves nothing", st.Scopes)
	}
	h, err := Handler(s, nil, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = oauthtest.CallWhoami(t, url, h)
	var lr *LoginRequiredError
	if !errors.As(err, &lr) {
		t.Fatalf("call with too few scopes: %v, want a LoginRequiredError", err)
	}
	if saved, err := Load(filepath.Join(dir, "remote.json")); err != nil || strings.Join(saved.StepUp, " ") != "read write" {
		t.Fatalf("token file after the 403: %+v, %v; want step_up_scopes read write", saved, err)
	}

	st, _ = login(t, s, dir)
	if !strings.Contains(" "+strings.Join(st.Scopes, " ")+" ", " write ") {
		t.Fatalf("scopes after the step-up login: %v, want the 403's write", st.Scopes)
	}
	if saved, err := Load(filepath.Join(dir, "remote.json")); err != nil || len(saved.StepUp) != 0 {
		t.Errorf("token file after the step-up login: %+v, %v; want no step_up_scopes left", saved, err)
	}
	h, err = Handler(s, nil, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := oauthtest.CallWhoami(t, url, h); err != nil || got != "written" {
		t.Fatalf("call after the step-up: %q, %v", got, err)
	}
}

// What a server's 403s leave in the token file is bounded: at most
// maxStepUpScopes scopes, the newest, each a scope-token of at most
// maxScopeLen bytes.
func TestStepUpScopesBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "remote.json")
	if err := Save(path, &Saved{Server: "remote", AccessToken: "at", ClientID: "c"}); err != nil {
		t.Fatal(err)
	}
	srv := &registry.Server{Name: "remote", URL: "http://127.0.0.1:1/mcp", OAuth: &registry.OAuth{Grant: registry.GrantAuthorizationCode, TokenFile: path}}
	h, err := newAuthCode(srv, http.DefaultClient, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.opts.fill()
	deny := func(scopes []string) {
		resp := &http.Response{StatusCode: http.StatusForbidden, Body: http.NoBody, Header: http.Header{
			"Www-Authenticate": {`Bearer error="insufficient_scope", scope="` + strings.Join(scopes, " ") + `"`}}}
		var lr *LoginRequiredError
		if err := h.Authorize(t.Context(), nil, resp); !errors.As(err, &lr) {
			t.Fatalf("403 insufficient_scope: %v, want a LoginRequiredError", err)
		}
	}
	var first, second []string
	for i := range 100 {
		first = append(first, fmt.Sprintf("a%d", i))
		second = append(second, fmt.Sprintf("b%d", i))
	}
	deny(append(first, strings.Repeat("x", maxScopeLen+1), "ok\x01"))
	deny(append(second[:10], strings.Repeat("y", maxScopeLen)))
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]string(nil), first[100-maxStepUpScopes+11:]...), second[:10]...), strings.Repeat("y", maxScopeLen))
	if !slices.Equal(s.StepUp, want) {
		t.Errorf("step_up_scopes %d: %q\nwant the newest %d: %q", len(s.StepUp), s.StepUp, maxStepUpScopes, want)
	}
}
