package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/gcpace"
	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// floorEnv, set, makes the bench binary the floor: a minimal go-sdk
// Streamable HTTP server whose one tool returns a constant ("paced": with
// colibri serve's collector pacing). It prints its URL on stdout and serves
// until killed.
const floorEnv = "COLIBRI_BENCH_FLOOR"

func serveFloor() {
	if os.Getenv(floorEnv) == "paced" {
		// The same collector pacing as colibri serve's (internal/gcpace).
		gcpace.Start(32 << 20)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "constant", Description: "Returns a constant."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("floor", err)
	}
	fmt.Printf("url=http://%s/mcp\n", ln.Addr())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	http.Serve(ln, h)
}

// startFloor runs the floor server as a process of its own (its CPU
// counters are its own).
func startFloor(mode string) (url string, pid int, stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), floorEnv+"="+mode)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	stop = func() { cmd.Process.Kill(); cmd.Wait() }
	u, err := listeningURL(out)
	if err != nil {
		stop()
		return "", 0, nil, err
	}
	return u, cmd.Process.Pid, stop, nil
}

func httpSession(url string, hc *http.Client) (*mcp.ClientSession, error) {
	if hc == nil {
		hc = &http.Client{}
	}
	return mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, noCaps).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// costSubject is one server process measured: its URL, pid and the call.
type costSubject struct {
	name string
	url  string
	pid  int
	call func(cs *mcp.ClientSession) (*mcp.CallToolResult, error)
	hc   func(i int) *http.Client // the HTTP client of session i (a bearer token), nil: plain
}

// costRow drives subject with n sessions for d and prints CPU per call (of
// the subject's process, from its own counters), calls/s, p50/p99, RSS.
func costRow(s costSubject, n int, d time.Duration) (cpuPerCall time.Duration, err error) {
	sessions := make([]*mcp.ClientSession, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := range n {
		wg.Go(func() {
			var hc *http.Client
			if s.hc != nil {
				hc = s.hc(i)
			}
			cs, err := httpSession(s.url, hc)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			sessions[i] = cs
		})
	}
	wg.Wait()
	defer func() {
		for _, cs := range sessions {
			if cs != nil {
				cs.Close()
			}
		}
	}()
	if first != nil {
		return 0, first
	}
	drive(sessions, time.Second, s.call) // warm up: JIT-free, but caches, pools, the warm process
	before := cpuTime(s.pid)
	start := time.Now()
	lat, failures := drive(sessions, d, s.call)
	took := time.Since(start)
	cpu := cpuTime(s.pid) - before
	if len(lat) == 0 {
		return 0, fmt.Errorf("%s: no call succeeded (%d failures)", s.name, failures)
	}
	cpuPerCall = cpu / time.Duration(len(lat)+failures)
	fmt.Printf("%-18s %8d %9d %9d %10.0f %10s %10s %12s %12s\n", s.name, n, len(lat), failures, float64(len(lat))/took.Seconds(),
		ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99)), fmt.Sprintf("%.3f ms", float64(cpuPerCall.Microseconds())/1000), mib(proctable.Memory(s.pid, "VmRSS")))
	return cpuPerCall, nil
}

func costHeader() {
	fmt.Printf("%-18s %8s %9s %9s %10s %10s %10s %12s %12s\n", "subject", "sessions", "calls", "failures", "calls/s", "p50", "p99", "CPU/call", "RSS")
}

// costRows: the cost of a call over Streamable HTTP, each subject driven by
// the same go-sdk client in the same run: the floor (go-sdk alone),
// colibri's own servers tool, and a hosted warm call to the demo server.
func costRows(colibri, demo string, env []string, short bool) error {
	d := 8 * time.Second
	if short {
		d = 2 * time.Second
	}
	url, pid, stop, err := startFloor("default")
	if err != nil {
		return err
	}
	defer stop()
	purl, ppid, pstop, err := startFloor("paced")
	if err != nil {
		return err
	}
	defer pstop()
	constant := func(cs *mcp.ClientSession) (*mcp.CallToolResult, error) {
		return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "constant", Arguments: map[string]any{}})
	}
	in, err := launch(colibri, map[string]any{"demo": map[string]any{"command": demo, "lifecycle": "persistent"}}, "http", env)
	if err != nil {
		return err
	}
	defer in.stop()
	subjects := []costSubject{
		{name: "floor (go-sdk)", url: url, pid: pid, call: constant},
		{name: "floor, paced GC", url: purl, pid: ppid, call: constant},
		{name: "colibri servers", url: in.url, pid: in.pid, call: func(cs *mcp.ClientSession) (*mcp.CallToolResult, error) {
			return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "colibri_external_mcp_servers", Arguments: map[string]any{}})
		}},
		{name: "colibri hosted", url: in.url, pid: in.pid, call: func(cs *mcp.ClientSession) (*mcp.CallToolResult, error) {
			return callVia(cs, "demo", "echo", map[string]any{"message": "hi"})()
		}},
	}
	fmt.Printf("\nthe cost of a call over Streamable HTTP (go-sdk client, %s per row; CPU of the subject's process only, from /proc/PID/stat; the demo server's own CPU is not in colibri's)\n", d)
	costHeader()
	for _, n := range []int{1, 10, 50} {
		var cpu []time.Duration
		for _, s := range subjects {
			c, err := costRow(s, n, d)
			if err != nil {
				return err
			}
			cpu = append(cpu, c)
		}
		fmt.Printf("%-18s %8d   servers tool %.2f× the floor's CPU per call (target ≤ 1.15); hosted warm call %.2f× (target ≤ 2.0)\n",
			"ratio", n, float64(cpu[2])/float64(cpu[0]), float64(cpu[3])/float64(cpu[0]))
		fmt.Printf("%-18s %8d   against the floor with colibri's GC pacing: servers tool %.2f×, hosted warm call %.2f×\n\n",
			"ratio (paced)", n, float64(cpu[2])/float64(cpu[1]), float64(cpu[3])/float64(cpu[1]))
	}
	return perRequestMemory(colibri, demo, env)
}

// perRequestMemory is colibri's RSS while N per-request calls are in flight
// (the demo server's slow tool, 2 s), against its RSS before: memory per
// call in flight.
func perRequestMemory(colibri, demo string, env []string) error {
	fmt.Printf("memory per per-request call in flight (demo server's slow tool, 2 s; Streamable HTTP, one session per call)\n")
	fmt.Printf("%-10s %12s %12s %14s %9s\n", "in flight", "RSS before", "peak RSS", "per call", "failures")
	for _, n := range []int{10, 50, 100} {
		tf, tokens, rmTokens, err := tokenFile(n)
		if err != nil {
			return err
		}
		in, err := launch(colibri, map[string]any{"demo": map[string]any{"command": demo}}, "http", env, "--max-procs", "128", "--token-file", tf)
		if err != nil {
			rmTokens()
			return err
		}
		sessions := make([]*mcp.ClientSession, n)
		for i := range sessions {
			if sessions[i], err = in.session(&http.Client{Transport: bearerRT{tokens[i], http.DefaultTransport}}); err != nil {
				in.stop()
				rmTokens()
				return err
			}
		}
		// One call first: colibri's own state built, the list cached.
		if _, err := timed(callVia(sessions[0], "demo", "echo", map[string]any{"message": "hi"})); err != nil {
			in.stop()
			return err
		}
		before := proctable.Memory(in.pid, "VmRSS")
		var wg sync.WaitGroup
		var mu sync.Mutex
		failures := 0
		var peak int64
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(20 * time.Millisecond):
					if r := proctable.Memory(in.pid, "VmRSS"); r > peak {
						mu.Lock()
						peak = max(peak, r)
						mu.Unlock()
					}
				}
			}
		}()
		for _, cs := range sessions {
			wg.Go(func() {
				if _, err := timed(callVia(cs, "demo", "slow", map[string]any{"steps": 2, "interval_ms": 1000})); err != nil {
					mu.Lock()
					failures++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(done)
		mu.Lock()
		fmt.Printf("%-10d %12s %12s %14s %9d\n", n, mib(before), mib(peak), fmt.Sprintf("%.2f MiB", float64(peak-before)/float64(n)/(1<<20)), failures)
		mu.Unlock()
		for _, cs := range sessions {
			cs.Close()
		}
		in.stop()
		rmTokens()
	}
	fmt.Println("target: ≤ 1 MiB per per-request call in flight (RSS at 100 concurrent ≤ 150 MB)")
	return perRequestLoad(colibri, demo, env)
}

// perRequestLoad: N sessions each making per-request echo calls back to
// back (a process each), colibri's peak RSS (VmHWM).
func perRequestLoad(colibri, demo string, env []string) error {
	fmt.Printf("\nper-request calls back to back (demo server's echo, a process each), 3 s, one session per principal\n")
	fmt.Printf("%-9s %9s %9s %10s %10s %10s %14s\n", "sessions", "calls", "failures", "calls/s", "p50", "p99", "colibri peak")
	for _, n := range []int{10, 50, 100} {
		tf, tokens, rmTokens, err := tokenFile(n)
		if err != nil {
			return err
		}
		in, err := launch(colibri, map[string]any{"demo": map[string]any{"command": demo}}, "http", env, "--max-procs", "128", "--token-file", tf)
		if err != nil {
			rmTokens()
			return err
		}
		sessions := make([]*mcp.ClientSession, n)
		tr := &http.Transport{MaxIdleConnsPerHost: n}
		for i := range sessions {
			if sessions[i], err = in.session(&http.Client{Transport: bearerRT{tokens[i], tr}}); err != nil {
				in.stop()
				rmTokens()
				return err
			}
		}
		start := time.Now()
		lat, failures := drive(sessions, 3*time.Second, func(cs *mcp.ClientSession) (*mcp.CallToolResult, error) {
			return callVia(cs, "demo", "echo", map[string]any{"message": "hi"})()
		})
		took := time.Since(start)
		fmt.Printf("%-9d %9d %9d %10.0f %10s %10s %14s\n", n, len(lat), failures, float64(len(lat))/took.Seconds(),
			ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99)), mib(proctable.Memory(in.pid, "VmHWM")))
		for _, cs := range sessions {
			cs.Close()
		}
		in.stop()
		rmTokens()
	}
	return nil
}

// tokenClients gives each of n sessions a principal of its own (a bearer
// token each), so that colibri's per-principal session cap does not apply.
func tokenFile(n int) (path string, tokens []string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "colibri-bench-tokens-")
	if err != nil {
		return "", nil, nil, err
	}
	var b strings.Builder
	for i := range n {
		tok := fmt.Sprintf("bench-token-%04d-%s", i, strings.Repeat("x", 24))
		tokens = append(tokens, tok)
		fmt.Fprintf(&b, "p%d %s\n", i, tok)
	}
	path = dir + "/tokens"
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", nil, nil, err
	}
	return path, tokens, func() { os.RemoveAll(dir) }, nil
}

type bearerRT struct {
	token string
	base  http.RoundTripper
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
