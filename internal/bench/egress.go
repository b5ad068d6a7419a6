package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
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
// neither colibri's call path nor MCP is in the figure. Its optional
// argument "dial" (host:port) is the address the connection is dialed to
// instead of the URL's, a relay's: the request, and TLS with it, is still
// the URL's.
const egressEnv = "COLIBRI_BENCH_EGRESS"

// relayEnv, set to a host:port, makes the bench binary the egress rows'
// bare relay: it listens on a loopback port of its own, prints
// "addr=HOST:PORT" on stdout, and copies the bytes of each connection it
// accepts both ways to and from a new connection to the target, with
// io.Copy between two *net.TCPConn (spliced by the runtime). No CONNECT,
// no check, no buffer of its own: what any proxy that carries the bytes
// through a process of its own costs at least. It serves until its stdin
// ends: the bench holds the other end, so that a bench that dies (Ctrl-C,
// a kill) leaves no relay behind, listening.
const relayEnv = "COLIBRI_BENCH_RELAY"

func serveRelay(target string, stdin io.Reader, stdout io.Writer) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("relay", err)
	}
	fmt.Fprintf(stdout, "addr=%s\n", ln.Addr())
	go func() {
		io.Copy(io.Discard, stdin)
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return // the bench has ended: so do the connections relayed
		}
		if err != nil {
			fail("relay", err)
		}
		go relayConn(c.(*net.TCPConn), target)
	}
}

// relayConn carries one accepted connection to a new one to target, each
// direction's end passed on as a half-close, and closes both when both
// directions have ended.
func relayConn(c *net.TCPConn, target string) {
	defer c.Close()
	t, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	tc := t.(*net.TCPConn)
	defer tc.Close()
	up := make(chan struct{})
	go func() {
		io.Copy(tc, c)
		tc.CloseWrite()
		close(up)
	}()
	io.Copy(c, tc)
	c.CloseWrite()
	<-up
}

// startRelay runs the bare relay to target as a process of its own and
// answers the address it listens on, and how to stop it. Its stdin is a
// pipe this process holds open until stop, or until it ends.
func startRelay(self, target string) (addr string, stop func(), err error) {
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), relayEnv+"="+target)
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "addr=")
	if err != nil || !ok {
		stop()
		return "", nil, fmt.Errorf("the relay to %s did not start listening (%q, %v)", target, line, err)
	}
	return addr, stop, nil
}

func serveEgress() {
	var proxy func(*http.Request) (*url.URL, error)
	if u, err := url.Parse(os.Getenv("HTTPS_PROXY")); err == nil && u.Host != "" {
		proxy = http.ProxyURL(u) // explicit: net/http takes no proxy for a loopback address
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "egress-bench", Version: "1"}, nil)
	type in struct {
		URL  string `json:"url"`
		Dial string `json:"dial,omitempty"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "get", Description: "Fetches a URL on a new connection; answers nanoseconds and bytes."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			tr := &http.Transport{Proxy: proxy, DisableKeepAlives: true, ForceAttemptHTTP2: false,
				TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // the bench's own certificate
			if a.Dial != "" {
				var d net.Dialer
				tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
					return d.DialContext(ctx, network, a.Dial)
				}
			}
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
//
// A third server, "egress-relay", is the "net": true one again, its
// connection dialed to a bare relay (serveRelay, one process per target,
// started before colibri): what a proxy that only carries the bytes
// through one more process costs, the floor under the proxy's figures.
// The three are called in rotation (A/B/C, B/C/A, C/A/B).
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
	relayOf := map[*httptest.Server]string{}
	for _, t := range []*httptest.Server{tlsSrv, plainSrv} {
		addr, stop, err := startRelay(self, hostOf(t))
		if err != nil {
			return err
		}
		defer stop()
		relayOf[t] = addr
	}
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
		"egress-relay":  server(true),
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
	// get is one timed fetch inside the named server (dialed to dial,
	// where not ""): its duration, and for the big rows the body's size
	// checked.
	get := func(name, u, dial string, want int64) func() (time.Duration, error) {
		args := map[string]any{"url": u}
		if dial != "" {
			args["dial"] = dial
		}
		return func() (time.Duration, error) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
				Arguments: map[string]any{"server": name, "name": "get", "arguments": args}})
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
	fmt.Printf("\nthe egress proxy: a sandboxed persistent server's fetch timed inside it, \"net\" list (the proxy%s) vs \"net\": true (direct) vs \"net\": true through a bare relay process (io.Copy, spliced), A/B/C rotated\n",
		map[bool]string{true: ", through the network namespace's forwarder", false: "; no user namespaces here: best_effort's per-port fallback, no forwarder"}[netns])
	header()
	line := func(face, row, measure string, n int, a, b string) {
		fmt.Printf("%-11s %-6s %-6s %-22s %5d %10s %10s\n", "egress", face, row, measure, n, a, b)
	}
	s3, err := alternateN(5, n, 0,
		get("egress-proxy", tlsSrv.URL+"/small", "", 0),
		get("egress-direct", tlsSrv.URL+"/small", "", 0),
		get("egress-relay", tlsSrv.URL+"/small", relayOf[tlsSrv], 0))
	if err != nil {
		return err
	}
	a, d, r := s3[0], s3[1], s3[2]
	ma, md, mr, pa, pd, pr := quantile(a, 0.5), quantile(d, 0.5), quantile(r, 0.5), quantile(a, 0.9), quantile(d, 0.9), quantile(r, 0.9)
	line("https", "first", "proxy", len(a), dur(ma), dur(pa))
	line("https", "first", "direct", len(d), dur(md), dur(pd))
	line("https", "first", "bare relay", len(r), dur(mr), dur(pr))
	fmt.Printf("%-11s %-6s %-6s %-22s %5s %10s %10s   (target ≤ +2ms a connection)\n", "egress", "https", "first", "added by the proxy", "",
		dur(ma-md), dur(pa-pd))
	fmt.Printf("%-11s %-6s %-6s %-22s %5s %10s %10s   (the floor: one more process carrying the bytes)\n\n", "egress", "https", "first", "added by the relay", "",
		dur(mr-md), dur(pr-pd))
	bigN := max(n/4, 5)
	for _, c := range []struct {
		face string
		srv  *httptest.Server
	}{{"https", tlsSrv}, {"http", plainSrv}} {
		u := c.srv.URL + "/big"
		s3, err := alternateN(2, bigN, 0,
			get("egress-proxy", u, "", bigBytes),
			get("egress-direct", u, "", bigBytes),
			get("egress-relay", u, relayOf[c.srv], bigBytes))
		if err != nil {
			return err
		}
		rate := func(x time.Duration) string { return fmt.Sprintf("%.0fMB/s", float64(bigBytes)/1e6/x.Seconds()) }
		ma, md, mr := quantile(s3[0], 0.5), quantile(s3[1], 0.5), quantile(s3[2], 0.5)
		// A throughput ratio x/y of the medians is y's time over x's.
		ratio := func(measure string, x, y time.Duration, note string) {
			fmt.Printf("%-11s %-6s %-6s %-22s %5s %10.3f %10s   (%s)\n", "egress", c.face, "10MiB", measure, "", float64(y)/float64(x), "", note)
		}
		line(c.face, "10MiB", "proxy", len(s3[0]), dur(ma), rate(ma))
		line(c.face, "10MiB", "direct", len(s3[1]), dur(md), rate(md))
		line(c.face, "10MiB", "bare relay", len(s3[2]), dur(mr), rate(mr))
		ratio("ratio", ma, md, "throughput proxy/direct, of the medians; target ≥ 0.90")
		ratio("ratio relay/direct", mr, md, "the floor of any proxy carrying the bytes through a process")
		ratio("ratio proxy/relay", ma, mr, "what the proxy costs beyond that floor")
		fmt.Println()
	}
	return nil
}

// userNamespaces reports whether this machine starts a process in a user
// and network namespace of its own, as colibri does for a "net" list.
func userNamespaces() bool {
	out, err := exec.Command("unshare", "-Urn", "true").CombinedOutput()
	return err == nil && strings.TrimSpace(string(out)) == ""
}
