package describe

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.golden.json")

// TestToolsGolden snapshots the three tools as clients see them in
// tools/list, for a sample registry: with the gate off (the default), and
// with the gate on in aggregate mode. A change to a name, a schema, an
// annotation or a description is a change to what models read, and must
// show up in review. Refresh with go test ./tools/describe -run TestToolsGolden -update.
func TestToolsGolden(t *testing.T) {
	reg := &registry.Registry{Path: "/usr/local/etc/colibri/external-mcp.json", Servers: map[string]*registry.Server{
		"demo":       {Name: "demo", Command: "demo-mcp-server", Description: "A small demo server: echo, add, slow, fail."},
		"everything": {Name: "everything", Command: "node", Description: "The MCP reference server that exercises every feature of the protocol."},
	}}
	got, err := json.MarshalIndent(map[string]any{
		"gate_off":          Tools(View{Registry: reg}),
		"gate_on_aggregate": Tools(View{Registry: reg, ExternalCall: true, Aggregate: true}),
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	const path = "testdata/tools.golden.json"
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("the tools' definitions changed; if that is intended, run go test ./tools/describe -run TestToolsGolden -update\ngot:\n%s", got)
	}
}
