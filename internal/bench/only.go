package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// onlyAB measures the serve --only hop (docs/protocol.md, "One server,
// fully"): the same request through `colibri-mcp serve --only NAME` over
// stdio, hosting t's server persistent (warm), against a direct client's
// warm session, alternating; tools/call of t's tool, and where the server
// has them prompts/get of its first prompt and resources/read of its first
// resource. The target of issue 38 is a warm tools/call at most 1.5× direct.
func onlyAB(colibri string, t target, env []string, n int) error {
	ctx := context.Background()
	env = append(append([]string(nil), env...), pinEnv, stateEnv)
	env = append(env, colibriEnv...)
	entry := map[string]any{"command": t.command, "lifecycle": "persistent"}
	if len(t.args) > 0 {
		entry["args"] = t.args
	}
	reg, removeReg, err := registryFile(map[string]any{t.name: entry})
	if err != nil {
		return err
	}
	defer removeReg()
	cmd := exec.Command(colibri, "serve", "--only", t.name, "--external-config", reg, "--external-call", "--log-level", "warn")
	cmd.Env, cmd.Stderr = env, os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, noCaps).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("starting colibri serve --only: %w", err)
	}
	defer cs.Close()
	dcs, err := directWarm(ctx, t, env)
	if err != nil {
		return err
	}
	defer dcs.Close()

	timed := func(f func(*mcp.ClientSession) error) func(*mcp.ClientSession) func() (time.Duration, error) {
		return func(s *mcp.ClientSession) func() (time.Duration, error) {
			return func() (time.Duration, error) {
				start := time.Now()
				err := f(s)
				return time.Since(start), err
			}
		}
	}
	type op struct {
		row string
		f   func(*mcp.ClientSession) func() (time.Duration, error)
	}
	ops := []op{{"call", timed(func(s *mcp.ClientSession) error {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: t.tool, Arguments: t.toolArg})
		if err == nil && res.IsError {
			err = fmt.Errorf("%s: isError", t.tool)
		}
		return err
	})}}
	caps := dcs.InitializeResult().Capabilities
	if caps.Prompts != nil {
		if pl, err := dcs.ListPrompts(ctx, nil); err == nil && len(pl.Prompts) > 0 && len(pl.Prompts[0].Arguments) == 0 {
			name := pl.Prompts[0].Name
			ops = append(ops, op{"prompt", timed(func(s *mcp.ClientSession) error {
				_, err := s.GetPrompt(ctx, &mcp.GetPromptParams{Name: name})
				return err
			})})
		}
	}
	if caps.Resources != nil {
		if rl, err := dcs.ListResources(ctx, nil); err == nil && len(rl.Resources) > 0 {
			uri := rl.Resources[0].URI
			ops = append(ops, op{"read", timed(func(s *mcp.ClientSession) error {
				_, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				return err
			})})
		}
	}
	for _, o := range ops {
		a, d, err := alternate(50, n, 0, o.f(cs), o.f(dcs))
		if err != nil {
			return fmt.Errorf("%s: %w", o.row, err)
		}
		rowAB(t.name, "only", o.row, a, d)
	}
	return nil
}
