package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

type warmServers struct {
	Servers []struct {
		Name      string
		Lifecycle string
		Warm      *struct {
			Up        bool
			Processes []struct {
				PID      int   `json:"pid"`
				UptimeMS int64 `json:"uptime_ms"`
			}
		}
	}
}

func serversOf(t *testing.T, cs *mcp.ClientSession) warmServers {
	t.Helper()
	res := call(t, cs, "colibri_external_mcp_servers", nil)
	var out warmServers
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	return out
}

// server-everything in persistent mode keeps its state across calls, and
// servers shows the warm process.
func TestWarmEverythingKeepsState(t *testing.T) {
	t.Parallel()
	extra := everything(t)
	extra["everything"]["lifecycle"] = "persistent"
	cs := connect(t, writeRegistry(t, extra), "COLIBRI_MCP_EXTERNAL_CALL=1")

	before := serversOf(t, cs)
	for _, s := range before.Servers {
		if s.Name == "everything" && (s.Warm == nil || s.Warm.Up) {
			t.Fatalf("before any call: %+v", s.Warm)
		}
		if s.Name == "demo" && s.Warm != nil {
			t.Errorf("a per-request server shows warm state")
		}
	}
	toggle := func() string {
		res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "everything", "name": "toggle-simulated-logging"})
		return res.Content[0].(*mcp.TextContent).Text
	}
	if got := toggle(); !strings.HasPrefix(got, "Started") {
		t.Fatalf("first toggle: %q", got)
	}
	if got := toggle(); !strings.HasPrefix(got, "Stopped") {
		t.Fatalf("second toggle: %q: the warm server did not keep its state", got)
	}
	var pid int
	for _, s := range serversOf(t, cs).Servers {
		if s.Name == "everything" {
			if s.Warm == nil || !s.Warm.Up || len(s.Warm.Processes) != 1 || s.Warm.Processes[0].PID == 0 {
				t.Fatalf("servers shows %+v", s.Warm)
			}
			pid = s.Warm.Processes[0].PID
		}
	}
	if !proctable.Alive(pid) {
		t.Errorf("the warm pid %d shown is not alive", pid)
	}
}

// When colibri ends (stdin EOF, SIGTERM), its warm servers end with it.
func TestWarmNothingSurvivesColibri(t *testing.T) {
	t.Parallel()
	reg := writeRegistry(t, registryDoc{"warm": {"command": demoBin, "lifecycle": "persistent"}})
	for _, how := range []string{"stdin EOF", "SIGTERM", "SIGINT"} {
		t.Run(how, func(t *testing.T) {
			cmd := exec.Command(colibriBin, "serve", "--external-config", reg, "--external-call")
			cmd.Env = append(os.Environ(), pinEnv(t), "E2E_SECRET=x")
			client := mcp.NewClient(&mcp.Implementation{Name: "warm", Version: "1"}, nil)
			transport := &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}
			cs, err := client.Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "warm", "name": "echo", "arguments": map[string]any{"message": "x"}})
			hosted := proctable.Children(cmd.Process.Pid)
			if len(hosted) != 1 {
				t.Fatalf("warm processes: %v", hosted)
			}
			switch how {
			case "SIGTERM":
				cmd.Process.Signal(syscall.SIGTERM)
			case "SIGINT":
				cmd.Process.Signal(syscall.SIGINT)
			}
			cs.Close() // closes colibri's stdin and waits for it to exit
			if !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
				t.Errorf("colibri ended with %v, want exit 0", cmd.ProcessState)
			}
			for _, pid := range hosted {
				if proctable.Alive(pid) {
					t.Errorf("warm process %d survived colibri", pid)
				}
			}
		})
	}
}
