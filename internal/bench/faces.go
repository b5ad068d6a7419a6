package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// colibriEnv is added to the environment of colibri's own process (the
// -colibri-env flag); hosted servers get colibri's explicit child
// environment, without it.
var colibriEnv []string

// pinEnv gives every colibri the bench starts a pin file of the bench's
// own (a temporary one, set in main), never the machine's default: a bench
// run must not change what the operator's colibri trusts. Pinning stays on
// (enforce, the default), so that its cost is in every row.
var pinEnv string

// stateEnv gives every colibri the bench starts a state folder of the
// bench's own (COLIBRI_MCP_STATE_DIR, in the same temporary folder): as
// root colibri's default is /var/db/colibri, which a bench run must not
// write (sandbox homes, the egress proxy's socket).
var stateEnv string

// startFace starts colibri-mcp serving a registry with t's server (with the
// given lifecycle, "" for the default) and connects the bench's client to
// it through one of its faces: "stdio" (colibri is the client's child) or
// "http" (Streamable HTTP on a loopback port). It returns colibri's pid, for
// its memory.
func startFace(colibri string, t target, lifecycle, face string, env []string) (*mcp.ClientSession, int, func(), error) {
	env = append(append([]string(nil), env...), pinEnv, stateEnv)
	env = append(env, colibriEnv...)
	entry := map[string]any{"command": t.command}
	if len(t.args) > 0 {
		entry["args"] = t.args
	}
	if lifecycle != "" {
		entry["lifecycle"] = lifecycle
	}
	reg, removeReg, err := registryFile(map[string]any{t.name: entry})
	if err != nil {
		return nil, 0, nil, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, noCaps)
	opts := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	switch face {
	case "stdio":
		cmd := exec.Command(colibri, "serve", "--external-config", reg, "--external-call", "--log-level", "warn")
		cmd.Env, cmd.Stderr = env, os.Stderr
		cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, opts)
		if err != nil {
			removeReg()
			return nil, 0, nil, fmt.Errorf("starting colibri: %w", err)
		}
		return cs, cmd.Process.Pid, func() { cs.Close(); removeReg() }, nil
	case "http":
		cmd := exec.Command(colibri, "serve", "--http", "127.0.0.1:0", "--external-config", reg, "--external-call")
		cmd.Env = env
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			removeReg()
			return nil, 0, nil, err
		}
		stop := func() { cmd.Process.Kill(); cmd.Wait(); removeReg() }
		url, err := listeningURL(stderr)
		if err != nil {
			stop()
			return nil, 0, nil, err
		}
		cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{}}, opts)
		if err != nil {
			stop()
			return nil, 0, nil, fmt.Errorf("connecting to colibri: %w", err)
		}
		return cs, cmd.Process.Pid, func() { cs.Close(); stop() }, nil
	}
	removeReg()
	return nil, 0, nil, fmt.Errorf("unknown face %q (stdio or http)", face)
}
