package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func getText(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func metricValue(t *testing.T, text, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no %s in the metrics", name)
	}
	return m[1]
}

// A registry broken and mended while serve --http runs: /readyz says so
// (file name without its folder, location, message), the log has one warn
// line per distinct bad content and an info line when it is good again,
// the metrics move, and a caller never sees the server's folders.
func TestRegistryHealthWhileServing(t *testing.T) {
	reg := writeRegistry(t, nil)
	good, _ := os.ReadFile(reg)
	c := startControlled(t, reg)
	readyz := strings.TrimSuffix(c.url, "/mcp") + "/readyz"

	if code, body := getText(t, readyz); code != 200 || body != "ready" {
		t.Fatalf("/readyz on a good registry: %d %q", code, body)
	}
	_, m := c.scrape(t, "")
	if metricValue(t, m, "colibri_registry_valid") != "1" || metricValue(t, m, "colibri_registry_errors_total") != "0" {
		t.Fatalf("metrics on a good registry:\n%s", m)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "colibri_http_sessions"} {
		metricValue(t, m, name)
	}

	// Broken: a typo in a key.
	os.WriteFile(reg, []byte(`{"servers": {"a": {"command": "/bin/true", "argz": []}}}`), 0o644)
	for range 3 {
		code, body := getText(t, readyz)
		if code != 503 || !strings.HasPrefix(body, filepath.Base(reg)+": /servers/a/argz: ") || strings.Contains(body, filepath.Dir(reg)) {
			t.Fatalf("/readyz on a broken registry: %d %q", code, body)
		}
	}
	testwait.Eventually(t, "the warn line", func() bool { return strings.Contains(c.logs.String(), "registry invalid") })
	logs := c.logs.String()
	if n := strings.Count(logs, "registry invalid"); n != 1 {
		t.Errorf("%d warn lines for one bad content, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs, "location=/servers/a/argz") || !strings.Contains(logs, "file="+reg) {
		t.Errorf("the warn line lacks the file or the location:\n%s", logs)
	}
	_, m = c.scrape(t, "")
	if metricValue(t, m, "colibri_registry_valid") != "0" || metricValue(t, m, "colibri_registry_errors_total") != "1" {
		t.Errorf("metrics on a broken registry:\n%s", m)
	}

	// A caller over HTTP sees the config error without the folders.
	cs, err := connectHTTP(t, c.url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "colibri_external_mcp_servers"})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "/servers/a/argz") || strings.Contains(text, filepath.Dir(reg)) {
		t.Errorf("servers over HTTP on a broken registry: %q", text)
	}

	// Mended: ready again, one info line.
	os.WriteFile(reg, good, 0o644)
	if code, body := getText(t, readyz); code != 200 || body != "ready" {
		t.Fatalf("/readyz on a mended registry: %d %q", code, body)
	}
	testwait.Eventually(t, "the info line", func() bool { return strings.Contains(c.logs.String(), "registry valid again") })
	_, m = c.scrape(t, "")
	if metricValue(t, m, "colibri_registry_valid") != "1" {
		t.Errorf("metrics on a mended registry:\n%s", m)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "colibri_external_mcp_servers"})
	if err != nil || res.IsError || strings.Contains(res.Content[0].(*mcp.TextContent).Text, filepath.Dir(reg)) {
		t.Errorf("servers over HTTP shows the server's folders: %v %v", err, res.Content[0].(*mcp.TextContent).Text)
	}
	if code := post(t, c.url, map[string]string{"Host": "evil.example"}); code != 403 {
		t.Fatalf("a rebinding request: %d", code)
	}
	_, m = c.scrape(t, "")
	if metricValue(t, m, "colibri_http_sessions") != "1" || metricValue(t, m, `colibri_http_refused_total{reason="403"}`) != "1" {
		t.Errorf("sessions or refusals not counted:\n%s", m)
	}
}

// A registry missing at start is a warning at start, naming what makes one.
func TestRegistryMissingAtStartWarns(t *testing.T) {
	c := startControlled(t, filepath.Join(t.TempDir(), "none.json"))
	testwait.Eventually(t, "the warn line", func() bool { return strings.Contains(c.logs.String(), "level=WARN msg=\"registry invalid") })
	if logs := c.logs.String(); !strings.Contains(logs, "colibri-mcp init") {
		t.Errorf("the start warning does not say how to make a registry:\n%s", logs)
	}
	readyz := strings.TrimSuffix(c.url, "/mcp") + "/readyz"
	if code, body := getText(t, readyz); code != 503 || !strings.HasPrefix(body, "none.json: the registry file does not exist") {
		t.Errorf("/readyz without a registry: %d %q", code, body)
	}
}

// serve over stdio warns at start too, on stderr (stdout is MCP's).
func TestRegistryMissingAtStartWarnsOverStdio(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.json")
	code, stdout, stderr := runHere(t, nil, "--external-config", missing, "serve")
	if code != 0 || stdout != "" || !strings.Contains(stderr, "level=WARN msg=\"registry invalid") || !strings.Contains(stderr, "file="+missing) {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
}
