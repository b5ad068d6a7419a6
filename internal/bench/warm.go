package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// directWarm connects the bench's client straight to t's server, once.
func directWarm(ctx context.Context, t target, env []string) (*mcp.ClientSession, error) {
	dcmd := exec.Command(t.command, t.args...)
	dcmd.Env = env
	return mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, noCaps).
		Connect(ctx, &mcp.CommandTransport{Command: dcmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// warmAB measures a call-tool through colibri (over face) to a persistent
// server against the same call on a direct client's warm session,
// alternating.
func warmAB(colibri string, t target, face string, env []string, n int) error {
	ctx := context.Background()
	cs, _, cleanup, err := startFace(colibri, t, "persistent", face, env)
	if err != nil {
		return err
	}
	defer cleanup()
	dcs, err := directWarm(ctx, t, env)
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
	rowAB(t.name, face, "warm", a, d)
	return nil
}

// bigAB measures an echo of a size-byte message through colibri (over
// face) to a persistent server against the same echo on a direct client's
// warm session, alternating, and reports colibri's peak RSS (VmHWM) against
// its RSS before the first big message.
func bigAB(colibri string, t target, face string, env []string, n, size int) error {
	ctx := context.Background()
	cs, pid, cleanup, err := startFace(colibri, t, "persistent", face, env)
	if err != nil {
		return err
	}
	defer cleanup()
	dcs, err := directWarm(ctx, t, env)
	if err != nil {
		return err
	}
	defer dcs.Close()

	// A small call first: the warm process is up, colibri's own state is
	// built; what VmHWM gains after this is the big messages'.
	small := t
	if _, err := colibriCall(ctx, cs, small)(); err != nil {
		return err
	}
	before := proctable.Memory(pid, "VmRSS")

	msg := strings.Repeat("0123456789abcdef", size/16+1)[:size]
	big := t
	big.toolArg = map[string]any{"message": msg}
	want := len(msg)
	check := func(res *mcp.CallToolResult) error {
		if len(res.Content) != 1 {
			return fmt.Errorf("echo: %d contents", len(res.Content))
		}
		tc, ok := res.Content[0].(*mcp.TextContent)
		if !ok || len(tc.Text) < want {
			return fmt.Errorf("echo: the message did not come back whole")
		}
		return nil
	}
	viaColibri := func() (time.Duration, error) {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
			Arguments: map[string]any{"server": t.name, "name": t.tool, "arguments": big.toolArg}})
		d := time.Since(start)
		if err == nil {
			if res.IsError {
				err = fmt.Errorf("colibri: %v", res.Content)
			} else {
				err = check(res)
			}
		}
		return d, err
	}
	direct := func() (time.Duration, error) {
		start := time.Now()
		res, err := dcs.CallTool(ctx, &mcp.CallToolParams{Name: t.tool, Arguments: big.toolArg})
		d := time.Since(start)
		if err == nil {
			err = check(res)
		}
		return d, err
	}
	a, d, err := alternate(2, n, 0, viaColibri, direct)
	if err != nil {
		return err
	}
	rowAB(t.name, face, "big", a, d)
	hwm := proctable.Memory(pid, "VmHWM")
	fmt.Printf("%-11s %-6s %-6s colibri peak RSS %s (%.1f× the message); RSS before the first big message %s; peak − before %s (%.1f×)\n\n",
		t.name, face, "big", mib(hwm), float64(hwm)/float64(size), mib(before), mib(hwm-before), float64(hwm-before)/float64(size))
	return nil
}
