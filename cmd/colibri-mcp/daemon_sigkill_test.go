//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// colibri killed with SIGKILL leaves no daemon of a sandboxed server:
// nothing of colibri acts after SIGKILL, so the sandbox launcher, the
// subreaper of its server's tree watching colibri, ends the tree: the
// server and its classic daemon (setsid in the middle process, fork, exit:
// it leads neither a session nor a group) are gone within a second of
// colibri. Unsandboxed, Pdeathsig ended the server alone and the daemon
// lived on; sandboxed too, before the launcher stayed.
func TestSandboxedDaemonEndsWithSIGKILLedColibri(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	dir := t.TempDir()
	report := filepath.Join(dir, "report")
	reg := writeRegistry(t, registryDoc{"d": {
		"command": fakeBin, "args": []string{"daemon"}, "lifecycle": "persistent",
		"env":     map[string]any{"FAKEMCP_DAEMON": "setsid", "FAKEMCP_REPORT": report},
		"sandbox": map[string]any{"write": []string{dir}, "net": false},
	}})
	cmd := exec.Command(colibriBin, "serve", "--external-config", reg)
	cmd.Env = append(os.Environ(), pinEnv(t), "E2E_SECRET=x")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
		Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res := call(t, cs, "colibri_external_mcp_list_tools", map[string]any{"server": "d"})
	if res.IsError {
		t.Fatalf("list_tools: %v", textOf(res))
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("the fake reported no daemon: %v", err)
	}
	var server, middle, daemon int
	if _, err := fmt.Sscanf(string(b), "%d %d %d", &server, &middle, &daemon); err != nil {
		t.Fatalf("report %q: %v", b, err)
	}
	t.Cleanup(func() {
		syscall.Kill(server, syscall.SIGKILL)
		syscall.Kill(daemon, syscall.SIGKILL)
	})
	if !proctable.Alive(daemon) || !proctable.Alive(server) {
		t.Fatal("the server or its daemon is gone before colibri is killed: the test proves nothing")
	}
	if sid, _ := syscall.Getpgid(daemon); sid == daemon {
		t.Fatal("the daemon leads its group: not the shape the test claims")
	}
	cmd.Process.Kill() // SIGKILL
	killed := time.Now()
	for _, pid := range []int{server, daemon} {
		for proctable.Alive(pid) {
			if time.Since(killed) > 10*time.Second {
				t.Fatalf("process %d outlived colibri's SIGKILL by 10 s", pid)
			}
			time.Sleep(time.Millisecond)
		}
		if d := time.Since(killed); d > time.Second {
			t.Errorf("process %d outlived colibri's SIGKILL by %v", pid, d)
		}
	}
}
