package termview

import (
	"os"
	"strings"
	"testing"
)

// A pipe, a file and a writer that is no file are no terminal: colibri
// then behaves as it does for an editor (no progress line, no hint).
func TestIsTerminalNotForPipesOrFiles(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, v := range map[string]any{"pipe": w, "file": f, "builder": &strings.Builder{}} {
		if IsTerminal(v) {
			t.Errorf("%s: a terminal", name)
		}
	}
}
