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

	viaColibri := colibriCall(ctx, cs, t)
	direct := func() (time.Duration, error) {
		start := time.Now()
		_, err := dcs.CallTool(ctx, &mcp.CallToolParams{Name: t.tool, Arguments: t.toolArg})
		return time.Since(start), err
	}
	// Warm both sides first: JIT, caches, the warm process itself.
	a, d, err := alternate(50, n, 0, viaColibri, direct)
	if err != nil {
		return err
	}
	ma, md := quantile(a, 0.5), quantile(d, 0.5)
	fmt.Printf("%-11s %-28s %5d %10s %10s\n", t.name, "colibri call-tool (warm)", len(a), us(ma), us(quantile(a, 0.9)))
	fmt.Printf("%-11s %-28s %5d %10s %10s\n", t.name, "direct warm session call", len(d), us(md), us(quantile(d, 0.9)))
	fmt.Printf("%-11s %-28s %5s %10s %10s\n\n", t.name, "difference colibri-direct", "", us(ma-md), us(quantile(a, 0.9)-quantile(d, 0.9)))
	return nil
}

func us(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d.Nanoseconds())/1e6) }
