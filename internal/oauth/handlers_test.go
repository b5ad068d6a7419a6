package oauth

import (
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// One handler per entry (a client_credentials token outlives the
// connection that fetched it); an edited entry gets a new one.
func TestHandlersReuse(t *testing.T) {
	hs := NewHandlers(Options{Dir: t.TempDir()})
	srv := ccServer("https://mcp.example.com/mcp", registry.OAuth{ClientID: "c", ClientSecret: "s"})
	a, err := hs.Handler(srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := hs.Handler(srv, nil)
	if a != b {
		t.Error("the same entry got two handlers")
	}
	edited := ccServer("https://mcp.example.com/mcp", registry.OAuth{ClientID: "c", ClientSecret: "s", Scopes: []string{"x"}})
	c, _ := hs.Handler(edited, nil)
	if c == a {
		t.Error("an edited entry kept its old handler")
	}
}
