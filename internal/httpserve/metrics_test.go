package httpserve

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func startMetrics(t *testing.T, opts MetricsOptions) *MetricsServer {
	t.Helper()
	opts.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "colibri_up 1\n") })
	m, err := NewMetrics(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return m
}

func get(t *testing.T, url string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestMetricsNeedsTokensBeyondLoopback(t *testing.T) {
	_, err := NewMetrics(MetricsOptions{Addr: "0.0.0.0:0", Handler: http.NotFoundHandler()})
	if err == nil || !strings.Contains(err.Error(), "without a token file") {
		t.Errorf("a non-loopback address without tokens: %v", err)
	}
	if _, err := NewMetrics(MetricsOptions{Addr: "nonsense", Handler: http.NotFoundHandler()}); err == nil || !strings.Contains(err.Error(), "COLIBRI_MCP_METRICS_ADDR") {
		t.Errorf("a bad address: %v", err)
	}
}

func TestMetricsOnLoopback(t *testing.T) {
	m := startMetrics(t, MetricsOptions{Addr: "127.0.0.1:0"})
	if code, body := get(t, m.URL(), nil); code != 200 || body != "colibri_up 1\n" {
		t.Errorf("scrape: %d %q", code, body)
	}
	if code, _ := get(t, strings.TrimSuffix(m.URL(), "/metrics")+"/mcp", nil); code != http.StatusNotFound {
		t.Errorf("another path: %d, want 404", code)
	}
	if code, _ := get(t, m.URL(), map[string]string{"Host": "attacker.example"}); code != http.StatusForbidden {
		t.Errorf("a rebinding Host: %d, want 403", code)
	}
	// A scraper that dials an address: an IP-literal Host, or none.
	if code, _ := get(t, m.URL(), map[string]string{"Host": "192.0.2.7:9100"}); code != 200 {
		t.Errorf("an IP-literal Host: %d, want 200", code)
	}
	if status, _ := noHost(t, strings.TrimPrefix(strings.TrimSuffix(m.URL(), "/metrics"), "http://"), "/metrics"); !strings.Contains(status, "200") {
		t.Errorf("no Host: %s, want 200", status)
	}
}

// --allowed-host holds for the metrics listener as for /mcp.
func TestMetricsAllowedHosts(t *testing.T) {
	m := startMetrics(t, MetricsOptions{Addr: "127.0.0.1:0", AllowedHosts: []string{"metrics.example.com"}})
	if code, _ := get(t, m.URL(), map[string]string{"Host": "metrics.example.com:443"}); code != 200 {
		t.Errorf("an allowed name: %d, want 200", code)
	}
	if code, _ := get(t, m.URL(), map[string]string{"Host": "other.example.com"}); code != http.StatusForbidden {
		t.Errorf("another name: %d, want 403", code)
	}
}

// With a token file, a scrape needs one of its bearer tokens; a refusal is
// logged without the token.
func TestMetricsWithTokens(t *testing.T) {
	var logs bytes.Buffer
	path := writeTokens(t, "prom tok-prom-1\n")
	m := startMetrics(t, MetricsOptions{Addr: "127.0.0.1:0", TokenFile: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if code, _ := get(t, m.URL(), nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code, _ := get(t, m.URL(), map[string]string{"Authorization": "Bearer tok-wrong-9"}); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", code)
	}
	if code, body := get(t, m.URL(), map[string]string{"Authorization": "Bearer tok-prom-1"}); code != 200 || body != "colibri_up 1\n" {
		t.Errorf("a good token: %d %q", code, body)
	}
	if !strings.Contains(logs.String(), "metrics request refused") || strings.Contains(logs.String(), "tok-wrong-9") {
		t.Errorf("log:\n%s", logs.String())
	}
	writeFile := writeTokens(t, "prom tok-prom-2\n")
	m.opts.TokenFile = writeFile
	if err := m.ReloadTokens(); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, m.URL(), map[string]string{"Authorization": "Bearer tok-prom-1"}); code != http.StatusUnauthorized {
		t.Errorf("a token removed by the reload: %d", code)
	}
}
