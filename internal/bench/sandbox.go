package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/sandbox"
)

// sandboxRow measures what the sandbox costs a per-request call: one
// colibri hosts the demo server twice, once sandboxed (the launcher,
// Landlock, seccomp, rlimits before execve) and once not, and the two are
// called alternately (A/B), cold each time. The target is a ratio of at
// most 1.15.
func sandboxRow(colibri, demo string, env []string, n int) error {
	if abi := sandbox.DetectABI(); abi < sandbox.NeedABI {
		fmt.Printf("\nsandbox row skipped: this kernel's Landlock ABI is %d, the sandbox needs %d\n", abi, sandbox.NeedABI)
		return nil
	}
	state, err := os.MkdirTemp("", "colibri-bench-state-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	reg, removeReg, err := registryFile(map[string]any{
		"demo":           map[string]any{"command": demo},
		"demo-sandboxed": map[string]any{"command": demo, "sandbox": map[string]any{"net": false, "max_memory_mb": 512}},
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
	t := target{tool: "echo", toolArg: map[string]any{"message": "hi"}}
	plain, boxed := t, t
	plain.name, boxed.name = "demo", "demo-sandboxed"
	a, b, err := alternate(3, n, 0, colibriCall(ctx, cs, boxed), colibriCall(ctx, cs, plain))
	if err != nil {
		return err
	}
	fmt.Printf("\nper-request (cold) call-tool of the demo server through colibri, sandboxed vs not (A/B alternated)\n")
	header()
	ma, mb, pa, pb := quantile(a, 0.5), quantile(b, 0.5), quantile(a, 0.9), quantile(b, 0.9)
	fmt.Printf("%-11s %-6s %-6s %-22s %5d %10s %10s\n", "demo", "stdio", "cold", "sandboxed", len(a), dur(ma), dur(pa))
	fmt.Printf("%-11s %-6s %-6s %-22s %5d %10s %10s\n", "demo", "stdio", "cold", "unsandboxed", len(b), dur(mb), dur(pb))
	fmt.Printf("%-11s %-6s %-6s %-22s %5s %10.3f %10.3f   (+%s median; target ≤ 1.15)\n", "demo", "stdio", "cold", "ratio sandboxed/not", "",
		float64(ma)/float64(mb), float64(pa)/float64(pb), dur(ma-mb))
	return nil
}
