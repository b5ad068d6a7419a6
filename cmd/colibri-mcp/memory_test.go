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
	"github.com/colibri-mcp/colibri-mcp/tools/input"
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
		pass bool // just under the bound: passed on, still within 64 MB
	}{
		{"array", "colibri_external_mcp_call_tool", func() map[string]any {
			return map[string]any{"server": "f", "name": "any", "arguments": valueHeavy(4 << 20)}
		}, false},
		{"members", "colibri_external_mcp_call_tool", func() map[string]any {
			return map[string]any{"server": "f", "name": "any", "arguments": memberHeavy(4 << 20)}
		}, false},
		{"own input", "colibri_external_mcp_list_tools", func() map[string]any {
			return map[string]any{"server": json.RawMessage(valueHeavy(4 << 20))}
		}, false},
		// The costliest shapes just under the bound are passed on within
		// it: elements, small members (each a key and a value), records
		// ([{"a":0},…]: a map each).
		{"array at the bound", "colibri_external_mcp_call_tool", func() map[string]any {
			return map[string]any{"server": "f", "name": "any", "arguments": json.RawMessage(`{"v":[0` + strings.Repeat(",0", input.MaxValues-4) + `]}`)}
		}, true},
		{"members at the bound", "colibri_external_mcp_call_tool", func() map[string]any {
			var b strings.Builder
			b.WriteString(`{"\u006b":0`)
			for i := 1; i < input.MaxValues/2-1; i++ {
				fmt.Fprintf(&b, `,"\u006b%d":0`, i)
			}
			return map[string]any{"server": "f", "name": "any", "arguments": json.RawMessage(b.String() + "}")}
		}, true},
		{"records at the bound", "colibri_external_mcp_call_tool", func() map[string]any {
			return map[string]any{"server": "f", "name": "any", "arguments": json.RawMessage(`{"v":[{"a":0}` + strings.Repeat(`,{"a":0}`, input.MaxValues/3-2) + `]}`)}
		}, true},
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
			t.Logf("%s: peak RSS %d MB → +%d MB, %v, isError %v", tc.name, before>>20, grew>>20, took, res.IsError)
			if grew > 64<<20 {
				t.Errorf("%s grew colibri's peak RSS by %d MB, want at most 64 MB", tc.name, grew>>20)
			}
			if tc.pass && res.IsError {
				t.Errorf("refused just under the bound: %.300s", textOf(res))
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

// honestDocument is a JSON object of about n bytes holding an array of
// records of fields short strings and numbers, the shape of a real export
// (issues, rows, log entries): a value every 20 bytes or so.
func honestDocument(n, fields int) (json.RawMessage, int) {
	var b bytes.Buffer
	b.Grow(n + 1024)
	b.WriteString(`{"records":[`)
	records := 0
	for ; b.Len() < n; records++ {
		if records > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		for f := range fields {
			if f > 0 {
				b.WriteByte(',')
			}
			if f%2 == 0 {
				fmt.Fprintf(&b, `"field_%d":"value %d of %d"`, f, f, records)
			} else {
				fmt.Fprintf(&b, `"n%d":%d`, f, records*f)
			}
		}
		b.WriteByte('}')
	}
	b.WriteString("]}")
	return b.Bytes(), records
}

// An honest 2 MB document of a few thousand records of thirty fields
// (about 100,000 values) is passed on, not refused too_large, and still
// costs colibri less than 64 MB of peak RSS: the bound on values is for
// the shape whose values take two bytes each, not for real data.
func TestHonestValueHeavyDocumentPasses(t *testing.T) {
	doc, records := honestDocument(2<<20, 30)
	reg := writeRegistry(t, registryDoc{"f": {"command": fakeBin, "args": []string{"ok"}, "timeout_ms": 20000}})
	cs, pid := memoryColibri(t, reg, "--audit-log", filepath.Join(t.TempDir(), "audit.log"))
	call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "f", "name": "any", "arguments": map[string]any{}})
	before := proctable.Memory(pid, "VmHWM")
	res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "f", "name": "any", "arguments": doc})
	grew := proctable.Memory(pid, "VmHWM") - before
	t.Logf("%d bytes, %d records of 30 fields: peak RSS +%d MB, isError %v", len(doc), records, grew>>20, res.IsError)
	if res.IsError {
		t.Fatalf("an honest %d-byte document of %d records was refused: %.400s", len(doc), records, textOf(res))
	}
	if grew > 64<<20 {
		t.Errorf("an honest 2 MB document grew colibri's peak RSS by %d MB, want at most 64 MB", grew>>20)
	}
}
