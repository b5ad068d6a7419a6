package main

// Aggregate mode with real clients on real servers whose tools declare an
// outputSchema (server-filesystem, server-memory): colibri's own failures
// show as colibri's message, never as the client's schema error.

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// npmServers are server-filesystem (serving dir) and server-memory, as
// registry entries; "slowmem" is server-memory under a 1 ms call timeout,
// and the stdio caller may not call memory's open_nodes.
func npmServers(t *testing.T, dir string) registryDoc {
	t.Helper()
	everythingPath(t) // node and the peers are there, or the test skips (fails in CI)
	peers, _ := filepath.Abs("../../testdata/peers/node_modules/@modelcontextprotocol")
	memory := func() map[string]any {
		return map[string]any{"command": "node", "args": []string{filepath.Join(peers, "server-memory/dist/index.js")},
			"env": map[string]any{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}}
	}
	mem := memory()
	mem["policy"] = map[string]any{"callers": map[string]any{"stdio": map[string]any{"tools": map[string]any{"deny": []string{"open_nodes"}}}}}
	slow := memory()
	slow["call_timeout_ms"] = 1
	return registryDoc{
		"fs":      {"command": "node", "args": []string{filepath.Join(peers, "server-filesystem/dist/index.js"), dir}},
		"memory":  mem,
		"slowmem": slow,
	}
}

// The cases the issue names: gate off, invalid arguments, denied, timeout.
var aggregateErrorCases = []struct {
	gate             bool
	name, args, want string
}{
	{false, "memory__read_graph", `{}`, "colibri: call_disabled: "},
	{false, "fs__list_allowed_directories", `{}`, "colibri: call_disabled: "},
	{true, "fs__read_text_file", `{"path": 5}`, "colibri: invalid_arguments: "},
	{true, "memory__open_nodes", `{"names": ["x"]}`, "colibri: denied: "},
	{true, "slowmem__read_graph", `{}`, "colibri: timeout: "},
}

// The official TypeScript SDK client (testdata/peers/ts-aggregate-errors.mjs).
func TestTypeScriptClientAggregateErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := writeRegistry(t, npmServers(t, dir))
	script, _ := filepath.Abs("../../testdata/peers/ts-aggregate-errors.mjs")
	for _, gate := range []string{"off", "on"} {
		args := []string{script, colibriBin, reg, gate}
		for _, c := range aggregateErrorCases {
			if c.gate == (gate == "on") {
				args = append(args, c.name, c.args, c.want)
			}
		}
		cmd := exec.Command("node", args...)
		cmd.Dir = filepath.Dir(script)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gate %s: %v\n%s%s", gate, err, out, stderr.String())
		}
		var summary struct{ WithOutputSchema int }
		if json.Unmarshal(out, &summary) != nil || summary.WithOutputSchema < 10 {
			t.Errorf("gate %s: the tools with an outputSchema were not offered: %s", gate, out)
		}
	}
}

// The MCP Inspector's CLI shows colibri's message for the same failures
// (but denied: the inspector calls only a tool it listed, and the policy
// hides the tool from this caller's list).
func TestInspectorAggregateErrors(t *testing.T) {
	t.Parallel()
	inspector := peer(t, "mcp-inspector")
	dir := t.TempDir()
	reg := writeRegistry(t, npmServers(t, dir))
	for _, c := range aggregateErrorCases {
		if strings.Contains(c.want, "denied") {
			continue
		}
		target := []string{"--cli", "-e", pinEnv(t), colibriBin, "serve", "--external-config", reg, "--aggregate"}
		if c.gate {
			target = append(target, "--external-call")
		}
		target = append(target, "--method", "tools/call", "--tool-name", c.name)
		var args map[string]any
		json.Unmarshal([]byte(c.args), &args)
		for k, v := range args {
			b, _ := json.Marshal(v)
			target = append(target, "--tool-arg", k+"="+string(b))
		}
		cmd := exec.Command(inspector, target...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if _, exited := err.(*exec.ExitError); err != nil && !exited {
			t.Fatalf("inspector: %v", err)
		}
		if !strings.Contains(string(out), `"text": "`+c.want) || strings.Contains(string(out)+stderr.String(), "does not match the tool's output schema") {
			t.Errorf("inspector %s: exit %d\n%s\nstderr:\n%s", c.name, cmd.ProcessState.ExitCode(), out, stderr.String())
		}
	}
}

// An MCP Apps server from npm in aggregate mode, with the official
// TypeScript SDK client (testdata/peers/ts-apps.mjs): the tool's _meta.ui
// reaches the client, and its ui:// resource reads through colibri.
func TestTypeScriptClientMCPApps(t *testing.T) {
	t.Parallel()
	everythingPath(t)
	peers, _ := filepath.Abs("../../testdata/peers")
	reg := writeRegistry(t, registryDoc{"apps": {"command": "node",
		"args": []string{filepath.Join(peers, "node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js"), "--stdio"}}})
	cmd := exec.Command("node", filepath.Join(peers, "ts-apps.mjs"), colibriBin, reg)
	cmd.Dir = peers
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ts-apps: %v\n%s%s", err, out, stderr.String())
	}
	t.Logf("ts-apps: %s", out)
}
