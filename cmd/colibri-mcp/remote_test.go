package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A url entry on the command line: `servers --json` shows its url,
// transport, header names and auth kind, never a value; `check --probe`
// connects to it (a go-sdk server behind a bearer token, on loopback) and
// prints its line.
func TestCLIRemoteEntry(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	mcpH := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-s3cr3t" || r.Header.Get("X-Api-Key") != "key-s3cr3t" {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		mcpH.ServeHTTP(w, r)
	}))
	defer srv.Close()
	reg := writeOnly(t, registryDoc{"remote": {"url": srv.URL + "/mcp",
		"headers": map[string]any{"X-Api-Key": "${REMOTE_KEY}"}, "bearer_token": "${REMOTE_TOKEN}"}})
	env := []string{"REMOTE_KEY=key-s3cr3t", "REMOTE_TOKEN=tok-s3cr3t"}

	code, stdout, stderr := runHere(t, env, "--external-config", reg, "servers", "--json")
	var got struct {
		Servers []struct {
			Name       string   `json:"name"`
			URL        string   `json:"url"`
			Transport  string   `json:"transport"`
			HeaderKeys []string `json:"header_keys"`
			Auth       string   `json:"auth"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil || len(got.Servers) != 1 {
		t.Fatalf("servers --json: exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	if e := got.Servers[0]; e.Name != "remote" || e.URL != srv.URL+"/mcp" || e.Transport != "streamable_http" ||
		!slices.Equal(e.HeaderKeys, []string{"X-Api-Key"}) || e.Auth != "bearer" {
		t.Errorf("servers --json shows %+v", e)
	}

	shown := stdout + stderr
	code, stdout, stderr = runHere(t, env, "--external-config", reg, "check", "--probe")
	if code != 0 || !regexp.MustCompile(`(?m)^  remote +ok \(1 tool\)$`).MatchString(stdout) {
		t.Errorf("check --probe: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, out := range []string{shown, stdout, stderr} {
		if strings.Contains(out, "s3cr3t") {
			t.Errorf("a secret is shown:\n%s", out)
		}
	}
}
