package oauth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// auth login with oauth.issuer set, against an MCP server whose metadata
// names another authorization server: refused before anything (a metadata
// request, a registration, a secret) reaches that server.
func TestHostileLoginForeignIssuer(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"issuer":"`+"http://"+r.Host+`","authorization_endpoint":"http://`+r.Host+`/authorize","token_endpoint":"http://`+r.Host+`/token","registration_endpoint":"http://`+r.Host+`/register","code_challenge_methods_supported":["S256"]}`)
	}))
	defer foreign.Close()
	var rs *httptest.Server
	rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"resource":"`+rs.URL+`/mcp","authorization_servers":["`+foreign.URL+`"]}`)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+rs.URL+`/.well-known/oauth-protected-resource"`)
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer rs.Close()
	for _, clientID := range []string{"", "pre-registered"} {
		srv := &registry.Server{Name: "r", URL: rs.URL + "/mcp", OAuth: &registry.OAuth{Grant: registry.GrantAuthorizationCode,
			ClientID: clientID, ClientSecret: "login-s3cret", Issuer: "https://login.example.com"}}
		_, err := Login(t.Context(), srv, LoginOptions{Options: Options{Dir: t.TempDir()},
			Open: func(string) error { t.Error("a browser was opened"); return nil }})
		if err == nil || !strings.Contains(err.Error(), "oauth.issuer") {
			t.Errorf("client %q: %v", clientID, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range seen {
		t.Errorf("the foreign authorization server was sent %s", r)
	}
}
