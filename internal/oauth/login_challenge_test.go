package oauth

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/colibri-mcp/colibri-mcp/internal/oauthtest"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// A server that challenges MCP POSTs only (a GET is answered 405, as many
// Streamable HTTP servers do), with its metadata at a path no well-known
// rule finds and the scope it wants in the challenge: auth login discovers
// with the POST, and asks for that scope. With a token that lacks a scope
// (403 insufficient_scope), it asks for the scope the 403 names.
func TestLoginDiscoversWithTheChallengedPOST(t *testing.T) {
	m := oauthtest.StartMock(t, "MOCK_DCR=1")
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"
	prm := srv.URL + "/metadata/custom"
	mux.Handle("/metadata/custom", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: url, AuthorizationServers: []string{m.Issuer}, ScopesSupported: []string{"read", "write", "admin"}}))
	want := "write"
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); tok != "" {
			if c := oauthtest.ClaimsOf(t, tok); !strings.Contains(" "+c.Scope+" ", " "+want+" ") {
				w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+want+`", resource_metadata="`+prm+`"`)
				http.Error(w, "insufficient scope", http.StatusForbidden)
				return
			}
			w.WriteHeader(http.StatusOK)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+prm+`", scope="`+want+`"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
	dir := filepath.Join(t.TempDir(), "oauth")
	s := &registry.Server{Name: "remote", URL: url, OAuth: &registry.OAuth{Grant: registry.GrantAuthorizationCode}}

	st, _ := login(t, s, dir)
	if !strings.Contains(" "+strings.Join(st.Scopes, " ")+" ", " write ") {
		t.Errorf("scopes after login: %v, want the challenge's write", st.Scopes)
	}
	// Step up: the server now wants admin; the token held lacks it.
	want = "admin"
	st, _ = login(t, s, dir)
	if !strings.Contains(" "+strings.Join(st.Scopes, " ")+" ", " admin ") {
		t.Errorf("scopes after the step-up login: %v, want the 403's admin", st.Scopes)
	}
}
