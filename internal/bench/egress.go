package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/sandbox"
)

// egressEnv, set, makes the bench binary the egress row's hosted server:
// an MCP server over stdio whose tool "get" fetches a URL on a connection
// of its own (dial, the proxy's CONNECT where HTTPS_PROXY is set, TLS,
// request, the whole body) and answers how long that took, in
// nanoseconds, and how many bytes came: timed inside the server, so that
// neither colibri's call path nor MCP is in the figure.
const egressEnv = "COLIBRI_BENCH_EGRESS"

func serveEgress() {
	var proxy func(*http.Request) (*url.URL, error)
	if u, err := url.Parse(os.Getenv("HTTPS_PROXY")); err == nil && u.Host != "" {
		proxy = http.ProxyURL(u) // explicit: net/http takes no proxy for a loopback address
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "egress-bench", Version: "1"}, nil)
	type in struct {
		URL string `json:"url"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "get", Description: "Fetches a URL on a new connection; answers nanoseconds and bytes."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			tr := &http.Transport{Proxy: proxy, DisableKeepAlives: true, ForceAttemptHTTP2: false,
				TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // the bench's own certificate
			defer tr.CloseIdleConnections()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
			if err != nil {
				return nil, nil, err
			}
			start := time.Now()
			resp, err := tr.RoundTrip(req)
			if err != nil {
				return nil, nil, err
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			d := time.Since(start)
			if err != nil {
				return nil, nil, err
			}
			if resp.StatusCode != http.StatusOK {
				return nil, nil, fmt.Errorf("%s: %s", a.URL, resp.Status)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d %d", d.Nanoseconds(), n)}}}, nil, nil
		})
	s.Run(context.Background(), &mcp.StdioTransport{})
}

// egressRows measure what colibri's egress proxy costs a sandboxed server
// (docs/benchmarks.md, "Egress proxy"): one colibri hosts the bench's own
// server twice, persistent, both sandboxed, one with a "net" list (in a
// network namespace of its own where user namespaces exist, through the
// forwarder and the proxy) and one with "net": true (straight to the
// target), called alternately (A/B). Two measures: a first HTTPS request
// on a new connection (TCP, CONNECT, TLS 1.3 handshake, a 2-byte answer),
// target at most 2 ms more through the proxy; and a 10 MiB body over
// HTTPS, target at least 90 % of the direct throughput. A third row is the
// same 10 MiB over plain HTTP, which the proxy forwards rather than tunnels.
func egressRows(colibri string, env []string, n int) error {
	if abi := sandbox.DetectABI(); abi < sandbox.NeedABI {
		fmt.Printf("\negress rows skipped: this kernel's Landlock ABI is %d, the sandbox needs %d\n", abi, sandbox.NeedABI)
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	const bigBytes = 10 << 20
	big := make([]byte, bigBytes)
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(bigBytes))
		w.Write(big)
	})
	tlsSrv, plainSrv := httptest.NewTLSServer(mux), httptest.NewServer(mux)
	defer tlsSrv.Close()
	defer plainSrv.Close()
	hostOf := func(s *httptest.Server) string { return s.Listener.Addr().(*net.TCPAddr).String() }
	state, err := os.MkdirTemp("", "colibri-bench-state-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	netns := userNamespaces()
	server := func(net any) map[string]any {
		// Without user namespaces a net list runs only with best_effort
		// (Landlock's per-port rule, no forwarder).
		return map[string]any{"command": self, "env": map[string]string{egressEnv: "1"}, "lifecycle": "persistent",
			"sandbox": map[string]any{"net": net, "best_effort": !netns}}
	}
	reg, removeReg, err := registryFile(map[string]any{
		"egress-proxy":  server([]string{hostOf(tlsSrv), hostOf(plainSrv)}),
		"egress-direct": server(true),
	})
	if err != nil {
		return err
	}
	defer removeReg()
	cmd := exec.Command(colibri, "serve", "--external-config", reg, "--external-call", "--log-level", "warn")
	cmd.Env, cmd.Stderr = append(append(append([]string{"XDG_STATE_HOME=" + state}, env...), colibriEnv...), pinEnv, stateEnv), os.Stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, noCaps).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("starting colibri: %w", err)
	}
	defer cs.Close()
	// get is one timed fetch inside the named server: its duration, and
	// for the big rows the body's size checked.
	get := func(name, u string, want int64) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
				Arguments: map[string]any{"server": name, "name": "get", "arguments": map[string]any{"url": u}}})
			if err != nil {
				return 0, err
			}
			text := ""
			if len(res.Content) > 0 {
				if tc, ok := res.Content[0].(*mcp.TextContent); ok {
					text = tc.Text
				}
			}
			if res.IsError {
				return 0, fmt.Errorf("%s: %s", name, text)
			}
			var ns, got int64
			if _, err := fmt.Sscanf(text, "%d %d", &ns, &got); err != nil {
				return 0, fmt.Errorf("%s: answered %q", name, text)
			}
			if want > 0 && got != want {
				return 0, fmt.Errorf("%s: %d bytes, want %d", name, got, want)
			}
			return time.Duration(ns), nil
		}
	}
	fmt.Printf("\nthe egress proxy: a sandboxed persistent server's fetch timed inside it, \"net\" list (the proxy%s) vs \"net\": true (direct), A/B alternated\n",
		map[bool]string{true: ", through the network namespace's forwarder", false: "; no user namespaces here: best_effort's per-port fallback, no forwarder"}[netns])
	header()
	small := func(name string) func() (time.Duration, error) { return get(name, tlsSrv.URL+"/small", 0) }
	a, d, err := alternate(5, n, 0, small("egress-proxy"), small("egress-direct"))
	if err != nil {
		return err
	}
	ma, md, pa, pd := quantile(a, 0.5), quantile(d, 0.5), quantile(a, 0.9), quantile(d, 0.9)
	fmt.Printf("%-11s %-6s %-6s %-22s %5d %10s %10s\n", "egress", "https", "first", "proxy", len(a), dur(ma), dur(pa))
	fmt.Printf("%-11s %-6s %-6s %-22s %5d %10s %10s\n", "egress", "https", "first", "direct", len(d), dur(md), dur(pd))
	fmt.Printf("%-11s %-6s %-6s %-22s %5s %10s %10s   (target ≤ +2ms a connection)\n\n", "egress", "https", "first", "added by the proxy", "",
		dur(ma-md), dur(pa-pd))
	bigN := max(n/4, 5)
	for _, c := range []struct{ face, base string }{{"https", tlsSrv.URL}, {"http", plainSrv.URL}} {
		bigOf := func(name string) func() (time.Duration, error) { return get(name, c.base+"/big", bigBytes) }
		a, d, err := alternate(2, bigN, 0, bigOf("egress-proxy"), bigOf("egress-direct"))
		if err != nil {
			return err
		}
		rate := func(x time.Duration) string { return fmt.Sprintf("%.0fMB/s", float64(bigBytes)/1e6/x.Seconds()) }
		ma, md := quantile(a, 0.5), quantile(d, 0.5)
		fmt.Printf("%-11s %-6s %-6s %-22s %5d %10s %10s\n", "egress", c.face, "10MiB", "proxy", len(a), dur(ma), rate(ma))
		fmt.Printf("%-11s %-6s %-6s %-22s %5d %10s %10s\n", "egress", c.face, "10MiB", "direct", len(d), dur(md), rate(md))
		fmt.Printf("%-11s %-6s %-6s %-22s %5s %10.3f %10s   (throughput proxy/direct, of the medians; target ≥ 0.90)\n\n", "egress", c.face, "10MiB", "ratio", "",
			float64(md)/float64(ma), "")
	}
	return nil
}

// userNamespaces reports whether this machine starts a process in a user
// and network namespace of its own, as colibri does for a "net" list.
func userNamespaces() bool {
	out, err := exec.Command("unshare", "-Urn", "true").CombinedOutput()
	return err == nil && strings.TrimSpace(string(out)) == ""
}
