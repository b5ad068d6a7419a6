package main

// serve --only NAME with a confined server-everything (docs/protocol.md,
// "One server, fully": everything of colibri's applies, confinement
// included): in the Linux sandbox, and in a jail through the fake jail
// tools of jail_test.go.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// onlyRoundTrip asks serve --only for what a caller of server-everything
// uses: its tool list and a call, a prompt without arguments, a resource.
func onlyRoundTrip(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx := t.Context()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v %+v", err, tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "confined"}})
	if err != nil || res.IsError || !strings.Contains(jsonOf(t, res.Content), "confined") {
		t.Fatalf("tools/call echo: %v %s", err, jsonOf(t, res))
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	asked := false
	for _, p := range prompts.Prompts {
		if len(p.Arguments) == 0 {
			if got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: p.Name}); err != nil || len(got.Messages) == 0 {
				t.Fatalf("prompts/get %s: %v %+v", p.Name, err, got)
			}
			asked = true
			break
		}
	}
	if !asked {
		t.Fatalf("server-everything lists no prompt without arguments: %s", jsonOf(t, prompts))
	}
	resources, err := cs.ListResources(ctx, nil)
	if err != nil || len(resources.Resources) == 0 {
		t.Fatalf("resources/list: %v %+v", err, resources)
	}
	if got, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: resources.Resources[0].URI}); err != nil || len(got.Contents) == 0 {
		t.Fatalf("resources/read %s: %v %+v", resources.Resources[0].URI, err, got)
	}
}

// A sandboxed entry served whole: every request works, and the server
// that answers them is confined (no_new_privs and a seccomp filter on
// the process that carries the entry's marker), not a sibling started
// beside the sandbox.
func TestOnlySandboxed(t *testing.T) {
	t.Parallel()
	mark := make([]byte, 8)
	rand.Read(mark)
	marker := "ONLY_SANDBOX_MARK=" + hex.EncodeToString(mark)
	e := everything(t)
	e["everything"]["lifecycle"] = "persistent"
	e["everything"]["sandbox"] = map[string]any{"net": false}
	e["everything"]["env"] = map[string]any{"ONLY_SANDBOX_MARK": strings.TrimPrefix(marker, "ONLY_SANDBOX_MARK=")}
	cs, logs := serveOnly(t, writeRegistry(t, e), "everything", nil, "--external-call")
	onlyRoundTrip(t, cs)

	// The entry's processes: the sandbox launcher's first stage (the
	// subreaper of the server's tree, unconfined by design) and, below it,
	// the server, confined before it was exec'd.
	launchers := processesWith(t, marker)
	if len(launchers) == 0 {
		t.Fatalf("no process carries the entry's marker; colibri's log:\n%s", logs)
	}
	servers := 0
	for _, l := range launchers {
		for _, pid := range descendants(l) {
			status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
			if err != nil {
				continue // gone meanwhile
			}
			servers++
			for _, want := range []string{"NoNewPrivs:\t1", "Seccomp:\t2"} {
				if !bytes.Contains(status, []byte(want)) {
					cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
					t.Errorf("hosted process %d (%q) is not confined: its status lacks %q", pid, cmdline, want)
				}
			}
		}
	}
	if servers == 0 {
		t.Fatalf("no server process below the sandbox launchers %v", launchers)
	}
}

// descendants are the processes below pid, by /proc's children lists.
func descendants(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, c := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(c); err == nil {
				out = append(out, n)
				out = append(out, descendants(n)...)
			}
		}
	}
	return out
}

// processesWith are the pids whose environment holds kv exactly.
func processesWith(t *testing.T, kv string) []int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue
		}
		for _, v := range bytes.Split(env, []byte{0}) {
			if string(v) == kv {
				pid, _ := strconv.Atoi(filepath.Base(d))
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// A jailed entry served whole: each request runs through the contract's
// jexec line (recorded by the fake), and nothing of the jail outlives it.
func TestOnlyJailed(t *testing.T) {
	t.Parallel()
	f := newJailFixture(t)
	everythingJS := everythingPath(t)
	entry := map[string]any{"command": "node", "args": []string{everythingJS, "stdio"}, "env": f.env(), "jail": map[string]any{"name": "mcp0"}}
	cs, _ := serveOnlyEnv(t, writeRegistry(t, registryDoc{"jailed": entry}), "jailed", nil, []string{"COLIBRI_JAIL_PRIV_MODE=none"}, "--external-call")
	onlyRoundTrip(t, cs)
	checkRecorded(t, f, []string{"jexec", "mcp0", "node", everythingJS, "stdio"})
}
