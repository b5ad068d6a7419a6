package tools

import (
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.golden.json")

// TestToolsGolden snapshots the three tools as clients see them in
// tools/list: a change to a name, a schema or an annotation is a change to
// the public contract and must show up in review. Refresh with
// go test ./tools -run TestToolsGolden -update.
func TestToolsGolden(t *testing.T) {
	got, err := json.MarshalIndent(Tools(), "", "  ")
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
		t.Errorf("the tools' definitions changed; if that is intended, run go test ./tools -run TestToolsGolden -update\ngot:\n%s", got)
	}
}
