package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
	"github.com/colibri-mcp/colibri-mcp/internal/testbuild"
)

// plainColibri is colibri built without the race detector: its memory is
// what a user's colibri spends (the race detector's shadow memory would
// hide any bound).
var plainColibri = sync.OnceValues(func() (string, error) {
	if !testbuild.Race {
		return colibriBin, nil
	}
	return testbuild.Build(filepath.Dir(colibriBin), "colibri-mcp-plain", testbuild.Module+"/cmd/colibri-mcp", false)
})

// memoryColibri serves stdio with reg and returns the session and
// colibri's pid.
func memoryColibri(t *testing.T, reg string, args ...string) (*mcp.ClientSession, int) {
	t.Helper()
	bin, err := plainColibri()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"serve", "--external-config", reg, "--external-call"}, args...)...)
	cmd.Env = append(os.Environ(), pinEnv(t), "E2E_SECRET=x")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "memory", Version: "1"}, nil).
		Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, cmd.Process.Pid
}

// valueHeavy is a JSON object of about n bytes whose one member is an
// array of small values: [0,0,0,…], the shape that costs a generic
// decoder fifty times its size.
func valueHeavy(n int) json.RawMessage {
	var b bytes.Buffer
	b.Grow(n + 32)
	b.WriteString(`{"values":[0`)
	for b.Len() < n {
		b.WriteString(",0")
	}
	b.WriteString("]}")
	return b.Bytes()
}

// memberHeavy is a JSON object of about n bytes of small members whose
// keys hold an escape (which the audit log's canonical form decodes).
func memberHeavy(n int) json.RawMessage {
	var b bytes.Buffer
	b.Grow(n + 32)
	b.WriteString(`{"k":0`)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `,"\u006b%d":0`, i)
	}
	b.WriteString("}")
	return b.Bytes()
}

// 4 MB of small values as a call's arguments (two million numbers, or
// 400,000 small members) cost colibri at most 64 MB of peak RSS (VmHWM,
// read from /proc), through call_tool and a colibri tool's own input
// (list_tools' server), with the audit log on (its canonical form), and
// the call is either passed on or refused too_large within the phase
// timeout. Decoded generically for the schema check, the array cost 173 MB
// and 11 s.
func TestHostileValueHeavyArgumentsMemory(t *testing.T) {
	for _, tc := range []struct {
		name string
		tool string
		args func() map[string]any
	}{
		{"array", "colibri_external_mcp_call_tool", func() map[string]any {
			return map[string]any{"server": "f", "name": "any", "arguments": valueHeavy(4 << 20)}
		}},
		{"members", "colibri_external_mcp_call_tool", func() map[string]any {
			return map[string]any{"server": "f", "name": "any", "arguments": memberHeavy(4 << 20)}
		}},
		{"own input", "colibri_external_mcp_list_tools", func() map[string]any {
			return map[string]any{"server": json.RawMessage(valueHeavy(4 << 20))}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := writeRegistry(t, registryDoc{"f": {"command": fakeBin, "args": []string{"ok"}, "timeout_ms": 20000}})
			cs, pid := memoryColibri(t, reg, "--audit-log", filepath.Join(t.TempDir(), "audit.log"))
			// Warm up: the first call starts what every call uses.
			call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "f", "name": "any", "arguments": map[string]any{}})
			before := proctable.Memory(pid, "VmHWM")
			args := tc.args()
			start := time.Now()
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: args})
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			grew := proctable.Memory(pid, "VmHWM") - before
			t.Logf("4 MB of small values: peak RSS %d MB → +%d MB, %v, isError %v", before>>20, grew>>20, took, res.IsError)
			if grew > 64<<20 {
				t.Errorf("4 MB of small values grew colibri's peak RSS by %d MB, want at most 64 MB", grew>>20)
			}
			if res.IsError && !strings.Contains(textOf(res), "too_large") {
				t.Errorf("refused, but not too_large: %.300s", textOf(res))
			}
			if took > 20*time.Second {
				t.Errorf("answered after %v, past the phase timeout", took)
			}
		})
	}
}

// Round three's E6: an 8 MB server name and an 8 MB tool name in one call
// peak at 150 MB of colibri's RSS at most (212 MB was measured).
func TestHostileHugeNamesPeakRSS(t *testing.T) {
	cs, pid := memoryColibri(t, writeRegistry(t, nil))
	huge := strings.Repeat("s", 8<<20)
	res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": huge, "name": huge})
	peak := proctable.Memory(pid, "VmHWM")
	t.Logf("8 MB server and tool names: peak RSS %d MB", peak>>20)
	if !res.IsError {
		t.Error("an 8 MB server name was not refused")
	}
	if peak > 150<<20 {
		t.Errorf("colibri's peak RSS reached %d MB, want at most 150 MB", peak>>20)
	}
}
