package tools_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// A url entry is shown by its url, transport, header names and auth kind;
// never a header value or token. A remote refusal carries http_status.
func TestRemoteServerShownAndRefused(t *testing.T) {
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer refuse.Close()
	reg := &registry.Registry{Servers: map[string]*registry.Server{
		"github": {Name: "github", URL: refuse.URL + "/mcp?key=q-s3cret-value&v=1", BearerToken: "ghp-s3cret-token",
			Headers: map[string]string{"X-MCP-Toolsets": "repos-s3cret"}},
	}}
	cs := connect(t, newService(t, true, reg))
	res := callTool(t, cs, tools.ServersTool, nil)
	b, _ := json.Marshal(res.StructuredContent)
	want := `{"auth":"bearer","header_keys":["X-MCP-Toolsets"],"lifecycle":"persistent","name":"github","transport":"streamable_http","url":"` + refuse.URL + `/mcp?key=[redacted]\u0026v=[redacted]","warm":{"processes":[],"up":false}}`
	if !strings.Contains(string(b), want) || strings.Contains(string(b), "s3cret") {
		t.Errorf("servers: %s\nwant it to hold %s", b, want)
	}

	res = callTool(t, cs, tools.CallToolTool, map[string]any{"server": "github", "name": "x"})
	b, _ = json.Marshal(res.StructuredContent)
	if errorKind(t, res) != "unauthorized" || !strings.Contains(string(b), `"http_status":401`) || strings.Contains(string(b), "s3cret") {
		t.Errorf("call: %s", b)
	}
}
