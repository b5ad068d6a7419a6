package main

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// warmAB measures a call-tool through colibri to a persistent server
// against the same call on a direct client's warm session, alternating.
func warmAB(colibri string, t target, env []string, n int) error {
	ctx := context.Background()
	cs, cleanup, err := startColibri(colibri, t, "persistent", env)
	if err != nil {
		return err
	}
	defer cleanup()
	dcmd := exec.Command(t.command, t.args...)
	dcmd.Env = env
	dcs, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, noCaps).
		Connect(ctx, &mcp.CommandTransport{Command: dcmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return err
	}
	defer dcs.Close()

	viaColibri := func() (time.Duration, error) {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
			Arguments: map[string]any{"server": t.name, "name": t.tool, "arguments": t.toolArg}})
		d := time.Since(start)
		if err == nil && res.IsError {
			err = fmt.Errorf("colibri: %v", res.Content)
		}
		return d, err
	}
	direct := func() (time.Duration, error) {
		start := time.Now()
		_, err := dcs.CallTool(ctx, &mcp.CallToolParams{Name: t.tool, Arguments: t.toolArg})
		return time.Since(start), err
	}
	for range 50 { // warm both: JIT, caches, the warm process itself
		if _, err := viaColibri(); err != nil {
			return err
		}
		if _, err := direct(); err != nil {
			return err
		}
	}
	var a, d []time.Duration
	for i := range n {
		first, second := viaColibri, direct
		fa, fb := &a, &d
		if i%2 == 1 {
			first, second, fa, fb = direct, viaColibri, &d, &a
		}
		x, err := first()
		if err != nil {
			return err
		}
		*fa = append(*fa, x)
		if x, err = second(); err != nil {
			return err
		}
		*fb = append(*fb, x)
	}
	ma, md := quantile(a, 0.5), quantile(d, 0.5)
	fmt.Printf("%-11s %-28s %5d %10s %10s\n", t.name, "colibri call-tool (warm)", len(a), us(ma), us(quantile(a, 0.9)))
	fmt.Printf("%-11s %-28s %5d %10s %10s\n", t.name, "direct warm session call", len(d), us(md), us(quantile(d, 0.9)))
	fmt.Printf("%-11s %-28s %5s %10s %10s\n\n", t.name, "difference colibri-direct", "", us(ma-md), us(quantile(a, 0.9)-quantile(d, 0.9)))
	return nil
}

func us(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d.Nanoseconds())/1e6) }
