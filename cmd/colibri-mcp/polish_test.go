package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
)

// --args that is not JSON: the message says where it stops being JSON.
func TestCallArgsBadJSONNamesThePosition(t *testing.T) {
	reg := writeRegistry(t, nil)
	code, _, stderr := runHere(t, nil, "--external-config", reg, "--external-call", "call", "demo", "echo", "--args", "{\"message\":\n \"hi\",}")
	if code != 2 || !strings.Contains(stderr, "line 2, column 7 (offset 18)") {
		t.Errorf("exit %d, %q: want the line and column of the stray comma", code, stderr)
	}
}

// One-shot commands print no INFO lines from the host (a persistent
// server's warm session starting and closing); serve and --log-level info
// still do.
func TestOneShotCommandsHaveNoInfoLines(t *testing.T) {
	reg := writeRegistry(t, registryDoc{"warm": {"command": demoBin, "lifecycle": "persistent"}})
	code, _, stderr := runHere(t, nil, "--external-config", reg, "--external-call", "call", "warm", "echo", "--args", `{"message":"hi"}`)
	if code != 0 || strings.Contains(stderr, "level=INFO") {
		t.Errorf("exit %d, stderr %q: INFO lines in a one-shot command", code, stderr)
	}
	_, _, stderr = runHere(t, nil, "--external-config", reg, "--log-level", "info", "--external-call", "call", "warm", "echo", "--args", `{"message":"hi"}`)
	if !strings.Contains(stderr, "level=INFO") {
		t.Errorf("--log-level info: no INFO line: %q", stderr)
	}
}

// list-tools of every server prints each server as it answers: the fast
// one before the hanging one's timeout, which then shows its reason.
func TestListToolsPrintsEachAsItFinishes(t *testing.T) {
	reg := writeRegistry(t, registryDoc{"slow": {"command": fakeBin, "args": []string{"hang-init"}, "timeout_ms": 3000}})
	cmd := exec.Command(colibriBin, "--external-config", reg, "--retries", "1", "list-tools")
	cmd.Env = append(os.Environ(), "E2E_SECRET=x")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	start := time.Now()
	sc := bufio.NewScanner(out)
	var seen strings.Builder
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "demo: ") {
			break
		}
	}
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("demo's tools came after %v: held back by the hanging server", took)
	}
	rest, _ := io.ReadAll(out)
	cmd.Wait()
	rest = append([]byte(seen.String()), rest...)
	if !strings.Contains(string(rest), "slow: error: timeout") || !strings.Contains(string(rest), "broken: error: spawn") {
		t.Errorf("the rest of the list:\n%s", rest)
	}
}

// Ctrl-C during call: the call is cancelled and colibri exits 130, as a
// shell expects of a command ended by SIGINT.
func TestCallInterruptedExits130(t *testing.T) {
	reg := writeRegistry(t, registryDoc{"hang": {"command": fakeBin, "args": []string{"hang-call"}}})
	cmd := exec.Command(colibriBin, "--external-config", reg, "--external-call", "--log-level", "debug", "call", "hang", "any")
	cmd.Env = append(os.Environ(), "E2E_SECRET=x")
	var stderr lockedWriter
	stderr.w = &strings.Builder{}
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Sent once the call is on its way to the server.
	testwait.Eventually(t, "the server to start", func() bool { return strings.Contains(stderr.String(), "msg=started") })
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("call did not end after SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("exit %d after SIGINT, want 130; stderr:\n%s", code, stderr.String())
	}
}

// serve's own options are under `serve --help`, and not in the other
// commands' help.
func TestServeOnlyFlagsUnderServeHelp(t *testing.T) {
	_, stdout, _ := runHere(t, nil, "serve", "--help")
	opts, _, _ := strings.Cut(stdout[strings.Index(stdout, "OPTIONS:"):], "GLOBAL OPTIONS:")
	for _, f := range serveOnlyFlags {
		if !strings.Contains(opts, "--"+f+" ") {
			t.Errorf("serve --help: --%s is not under OPTIONS:\n%s", f, stdout)
		}
	}
	if _, stdout, _ = runHere(t, nil, "servers", "--help"); strings.Contains(stdout, "--http") {
		t.Errorf("servers --help shows --http:\n%s", stdout)
	}
}

// A hosted server chooses its tools' names, and the shells do not quote
// what completion offers (bash's compgen -W expands $(…) and `…` on TAB):
// only names of MCP's recommended characters are offered.
func TestCompletionLeavesHostileToolNamesOut(t *testing.T) {
	hostile := []string{"a;touch${IFS}/tmp/x", "$(touch /tmp/x)", "`id`", "*", "b c", "q'x", "k:desc", strings.Repeat("l", 129)}
	list := `{"tools":[{"name":"fine.tool-1","inputSchema":{"type":"object"}}`
	for _, n := range hostile {
		b, _ := json.Marshal(n)
		list += `,{"name":` + string(b) + `,"inputSchema":{"type":"object"}}`
	}
	toolsFile := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(toolsFile, []byte(list+"]}"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := writeRegistry(t, registryDoc{"evil": {"command": fakeBin, "args": []string{"listed-tools"}, "env": map[string]any{"FAKEMCP_TOOLS_FILE": toolsFile}}})
	code, stdout, _ := runCLI(t, nil, "--external-config", reg, "call", "evil", "--generate-shell-completion")
	if code != 0 || stdout != "fine.tool-1\n" {
		t.Errorf("completion of evil's tools: exit %d, %q, want only fine.tool-1", code, stdout)
	}
}

// Completion offers the registry's server names, then that server's tools.
func TestCompletionOffersServersAndTools(t *testing.T) {
	t.Parallel()
	reg := writeRegistry(t, nil)
	code, stdout, _ := runCLI(t, nil, "--external-config", reg, "call", "--generate-shell-completion")
	if code != 0 || !strings.Contains(stdout, "demo\n") || !strings.Contains(stdout, "broken\n") {
		t.Errorf("completion of call's server: exit %d:\n%s", code, stdout)
	}
	code, stdout, _ = runCLI(t, nil, "--external-config", reg, "describe", "demo", "--generate-shell-completion")
	if code != 0 || !strings.Contains(stdout, "echo\n") || !strings.Contains(stdout, "slow\n") {
		t.Errorf("completion of describe's tool: exit %d:\n%s", code, stdout)
	}
}

// A url entry whose server accepts and never answers fails timeout within
// its timeout_ms and a second, in the one-shot call (a second more is
// allowed for colibri's own start): it took 5.5 s with timeout_ms 1500.
func TestCallSilentRemoteTimesOutWithinItsBudget(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	const timeoutMS = 1500
	reg := writeRegistry(t, registryDoc{"silent": {"url": "http://" + ln.Addr().String() + "/mcp", "timeout_ms": timeoutMS}})
	cmd := exec.Command(colibriBin, "--external-config", reg, "--external-call", "call", "silent", "any")
	cmd.Env = append(os.Environ(), "E2E_SECRET=x", pinEnv(t))
	start := time.Now()
	out, _ := cmd.CombinedOutput()
	took := time.Since(start)
	if !strings.Contains(string(out), "timeout") {
		t.Errorf("the call should fail timeout:\n%s", out)
	}
	if budget := timeoutMS*time.Millisecond + time.Second; took > budget+time.Second {
		t.Errorf("call failed after %v, want within timeout_ms + 1 s (%v) and colibri's start", took, budget)
	}
}
