package pin_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/pin"
)

// toolFixture is one server's tool list as colibri listed it
// (testdata/toolscan, docs/security.md lists them with their versions).
type toolFixture struct {
	Package, Version string
	Tools            []*mcp.Tool
}

// knownFlags are the flags the scan finds in the fixtures, each with the
// reason it stands (docs/security.md); anything else is a false positive.
var knownFlags = map[string][]string{}

// The scan is quiet on the tool lists of the most used MCP servers on npm
// (testdata/toolscan): no flag but those knownFlags explains.
func TestScanQuietOnNpmServers(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/toolscan/*.json")
	if len(files) < 10 {
		t.Fatalf("testdata/toolscan holds %d tool lists, want at least 10", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx toolFixture
		if err := json.Unmarshal(data, &fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tl := range fx.Tools {
			c, err := pin.Canonical(tl)
			if err != nil {
				t.Fatal(err)
			}
			flags := pin.Scan(pin.KindTool, c)
			if !reflect.DeepEqual(flags, pin.ScanTool(tl)) {
				t.Errorf("%s: ScanTool %v differs from Scan %v", tl.Name, pin.ScanTool(tl), flags)
			}
			for _, fl := range flags {
				key := fx.Package + " " + tl.Name
				if !slices.Contains(knownFlags[key], fl.Flag) {
					t.Errorf("%s@%s: tool %s flagged %s in %s: %s", fx.Package, fx.Version, tl.Name, fl.Flag, fl.Where, fl.Text)
				}
			}
		}
	}
}

// What the scan costs on real definitions: every tool of the fixtures.
func BenchmarkScanNpmTools(b *testing.B) {
	files, _ := filepath.Glob("../../testdata/toolscan/*.json")
	var defs []*mcp.Tool
	for _, f := range files {
		data, _ := os.ReadFile(f)
		var fx toolFixture
		json.Unmarshal(data, &fx)
		defs = append(defs, fx.Tools...)
	}
	b.ResetTimer()
	for i := range b.N {
		pin.ScanTool(defs[i%len(defs)]) // as the pins scan a hosted list
	}
}
