package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// onlyAB measures the serve --only hop (docs/protocol.md, "One server,
// fully"): the same request through `colibri-mcp serve --only NAME` over
// stdio, hosting t's server persistent (warm), against a direct client's
// warm session, alternating; tools/call of t's tool, and where the server
// has them prompts/get of its first prompt and resources/read of its first
// resource. The target of issue 38 is a warm tools/call at most 1.5× direct.
//
// A third side is the same client through a bare stdio relay
// (serveStdioRelay) to a warm server of its own: the floor of any stdio
// hop, whatever it does. The three are called in rotation (A/B/C, B/C/A,
// C/A/B).
func onlyAB(colibri string, t target, env []string, n int) error {
	ctx := context.Background()
	env = append(append([]string(nil), env...), pinEnv, stateEnv)
	// -colibri-env is colibri's own: the direct and relayed servers must
	// not get it (GOMAXPROCS=1 there slowed the direct demo server by
	// a third, and passed for colibri's gain).
	cenv := append(append([]string(nil), env...), colibriEnv...)
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
	cmd.Env, cmd.Stderr = cenv, os.Stderr
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
	rcs, err := relayWarm(ctx, t, env)
	if err != nil {
		return err
	}
	defer rcs.Close()

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
		s, err := alternateN(50, n, 0, o.f(cs), o.f(dcs), o.f(rcs))
		if err != nil {
			return fmt.Errorf("%s: %w", o.row, err)
		}
		rowABC(t.name, "only", o.row, s[0], s[1], s[2])
	}
	return nil
}

// stdioRelayEnv, set, makes the bench binary the only rows' bare stdio
// relay: it runs its arguments as a command (the hosted server's), with its
// stdin and stdout as pipes and its stderr the relay's, and copies its own
// stdin to the child's and the child's stdout to its own, with io.Copy: no
// framing, no decoding, no check. It is what any process between a client
// and a stdio server costs at least: two more pipe crossings and one more
// process to wake.
const stdioRelayEnv = "COLIBRI_BENCH_STDIO_RELAY"

// serveStdioRelay relays to argv until either side ends: the end of its
// stdin is passed on by closing the child's, and when the child's stdout
// ends the child's stdin is closed and the child waited for, so that the
// relay never leaves its server behind. The child's environment is the
// relay's own less stdioRelayEnv.
func serveStdioRelay(argv []string) {
	if len(argv) == 0 {
		fail("stdio relay", fmt.Errorf("no command to run"))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, stdioRelayEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fail("stdio relay", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail("stdio relay", err)
	}
	if err := cmd.Start(); err != nil {
		fail("stdio relay", err)
	}
	go func() {
		io.Copy(in, os.Stdin)
		in.Close() // the client's end: the server's stdin ends too
	}()
	io.Copy(os.Stdout, out)
	in.Close() // the server's stdout ended: if it still runs, its stdin ends now
	if err := cmd.Wait(); err != nil {
		fail("stdio relay", err)
	}
}

// relayWarm connects the bench's client to t's server through the bare
// stdio relay, once: the relay is the bench binary itself, with the
// direct side's environment (which the relay hands on to the server) and,
// as the direct side's server has, no stderr: a server's notices on it
// (server-everything's "Starting default (STDIO) server...") stay out of
// the bench's output, and a relay that fails is a failed connect.
func relayWarm(ctx context.Context, t target, env []string) (*mcp.ClientSession, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	rcmd := exec.Command(self, append([]string{t.command}, t.args...)...)
	rcmd.Env = append(append([]string(nil), env...), stdioRelayEnv+"=1")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "relay", Version: "1"}, noCaps).
		Connect(ctx, &mcp.CommandTransport{Command: rcmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, fmt.Errorf("starting the stdio relay: %w", err)
	}
	return cs, nil
}
