package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// growthRows: how colibri's cost grows with the registry and the sessions:
// RSS and a warm call's median with 1, 10 and 50 registry entries; 1, 10,
// 100 and 500 concurrent HTTP sessions each making warm calls; list_tools
// over 1, 10 and 50 servers.
func growthRows(colibri, demo string, env []string, short bool) error {
	calls, d := 300, 5*time.Second
	if short {
		calls, d = 100, 2*time.Second
	}
	entries := func(n int, lifecycle string) map[string]any {
		m := map[string]any{}
		for i := range n {
			e := map[string]any{"command": demo}
			if lifecycle != "" {
				e["lifecycle"] = lifecycle
			}
			m["demo"+strconv.Itoa(i)] = e
		}
		return m
	}
	fmt.Printf("\ngrowth: registry entries (demo servers, persistent; a warm call to one of them over stdio)\n")
	fmt.Printf("%-9s %12s %12s %12s\n", "entries", "warm median", "warm p90", "colibri RSS")
	for _, n := range []int{1, 10, 50} {
		in, err := launch(colibri, entries(n, "persistent"), "stdio", env)
		if err != nil {
			return err
		}
		call := callVia(in.cs, "demo0", "echo", map[string]any{"message": "hi"})
		var lat []time.Duration
		for i := range calls + 20 {
			x, err := timed(call)
			if err != nil {
				in.stop()
				return err
			}
			if i >= 20 {
				lat = append(lat, x)
			}
		}
		fmt.Printf("%-9d %12s %12s %12s\n", n, ms(quantile(lat, 0.5)), ms(quantile(lat, 0.9)), mib(proctable.Memory(in.pid, "VmRSS")))
		in.stop()
	}

	fmt.Printf("\ngrowth: concurrent Streamable HTTP sessions (one principal each), each making warm calls back to back for %s\n", d)
	fmt.Printf("%-9s %9s %9s %10s %10s %10s %12s\n", "sessions", "calls", "failures", "calls/s", "p50", "p99", "colibri RSS")
	for _, n := range []int{1, 10, 100, 500} {
		tf, tokens, rmTokens, err := tokenFile(n)
		if err != nil {
			return err
		}
		in, err := launch(colibri, entries(1, "persistent"), "http", env, "--token-file", tf)
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
				return fmt.Errorf("session %d of %d: %w", i+1, n, err)
			}
		}
		call := func(cs *mcp.ClientSession) (*mcp.CallToolResult, error) {
			return callVia(cs, "demo0", "echo", map[string]any{"message": "hi"})()
		}
		drive(sessions[:1], 500*time.Millisecond, call)
		start := time.Now()
		lat, failures := drive(sessions, d, call)
		took := time.Since(start)
		fmt.Printf("%-9d %9d %9d %10.0f %10s %10s %12s\n", n, len(lat), failures, float64(len(lat))/took.Seconds(),
			ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99)), mib(proctable.Memory(in.pid, "VmRSS")))
		for _, cs := range sessions {
			cs.Close()
		}
		in.stop()
		rmTokens()
	}

	fmt.Printf("\ngrowth: list_tools of every server (per-request demo servers: each list_tools starts every one of them)\n")
	fmt.Printf("%-9s %12s %12s %12s\n", "servers", "median", "p90", "colibri RSS")
	for _, n := range []int{1, 10, 50} {
		in, err := launch(colibri, entries(n, ""), "stdio", env)
		if err != nil {
			return err
		}
		list := func() (*mcp.CallToolResult, error) {
			return in.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "colibri_external_mcp_list_tools", Arguments: map[string]any{}})
		}
		var lat []time.Duration
		for i := range 25 {
			x, err := timed(list)
			if err != nil {
				in.stop()
				return err
			}
			if i >= 5 {
				lat = append(lat, x)
			}
		}
		fmt.Printf("%-9d %12s %12s %12s\n", n, ms(quantile(lat, 0.5)), ms(quantile(lat, 0.9)), mib(proctable.Memory(in.pid, "VmRSS")))
		in.stop()
	}
	return nil
}
