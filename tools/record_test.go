package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// A call_tool call's record names what its handler read of the input (the
// input is decoded once, by the handler), not a read of its own made
// before: here the request's input changes between the two, and the audit
// line names what the handler saw. The input is refused (an unknown key),
// and its record names its server and tool all the same.
func TestCallToolRecordIsTheHandlersRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := New(Options{Registry: func() (*registry.Registry, error) { return &registry.Registry{}, nil },
		Audit: w, Digester: audit.NewDigester([]byte("k"))})
	defer s.Close()
	p := &mcp.CallToolParamsRaw{Name: CallToolTool, Arguments: json.RawMessage(`{"server":"asked","name":"first","arguments":{},"x":1}`)}
	req := &mcp.CallToolRequest{Params: p}
	res, err := s.control(t.Context(), "tools/call", req, func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
		p.Arguments = json.RawMessage(`{"server":"read","name":"once","arguments":{},"x":1}`)
		return s.handleCallTool(ctx, req)
	})
	if r, _ := res.(*mcp.CallToolResult); err != nil || r == nil || !r.IsError {
		t.Fatalf("the call: %v, %v; want its input refused", res, err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		t.Fatal("no audit line")
	}
	var line struct{ Server, Tool, ErrorKind string }
	if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line.Server != "read" || line.Tool != "once" {
		t.Errorf("audit line %s: want server read, tool once (what the handler read)", sc.Bytes())
	}
}
