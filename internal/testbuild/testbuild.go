// Package testbuild builds the repository's own programs for its tests: once
// per test binary (call it from TestMain), into a folder of the test's, with
// the race detector when the test binary itself has it, so that end-to-end
// tests see colibri's races too, and the build cache is shared with `go test`.
//
//	dir, _ := os.MkdirTemp("", "colibri-test-")
//	bin, err := testbuild.Build(dir, "colibri-mcp", testbuild.Module+"/cmd/colibri-mcp", testbuild.Race)
//
// It writes nothing into the source tree.
package testbuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/statedir"
)

// Module is the repository's module path.
const Module = "github.com/colibri-mcp/colibri-mcp"

// Build compiles package pkg into dir/name, with -race when race is set, and
// returns the binary's path. A failure carries the compiler's output.
func Build(dir, name, pkg string, race bool) (string, error) {
	out := filepath.Join(dir, name)
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, stderr.String())
	}
	return out, nil
}

// Fake builds the fake MCP server of internal/fakemcp into dir. It is built
// without the race detector: it is not colibri, and each test spawns it
// many times, so it must start fast.
func Fake(dir string) (string, error) {
	return Build(dir, "fakemcp", Module+"/internal/fakemcp", false)
}

// MustDir makes a temporary folder for built programs, or exits: it is for
// TestMain, where there is no *testing.T to fail.
func MustDir() string {
	dir, err := os.MkdirTemp("", "colibri-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbuild:", err)
		os.Exit(1)
	}
	return dir
}

// IsolatePins points every colibri this test binary runs (in-process, or a
// child that inherits its environment) at a pin file and a state folder in
// dir (COLIBRI_MCP_PIN_FILE, COLIBRI_MCP_STATE_DIR), never at the machine's
// default (docs/operations.md: /var/db/colibri as root, which is how CI
// runs), so that a test run never changes what the next run, or the
// operator's service, trusts, and a colibri running elsewhere on the machine
// cannot fail the tests. A test that wants a pin file or folder of its own
// sets the variable again in its child's environment (the last value wins).
// Call it from TestMain before m.Run; the check it returns, after m.Run,
// fails when a file of the default folder changed while the tests ran,
// naming the file and when it changed: a colibri started by a test with an
// environment of its own, or another colibri of this machine.
func IsolatePins(dir string) (check func() error) {
	def := statedir.Resolve("", os.Geteuid(), os.LookupEnv).Path
	state := filepath.Join(dir, "state")
	os.Mkdir(state, 0o700)
	os.Setenv("COLIBRI_MCP_PIN_FILE", filepath.Join(dir, "pins.json"))
	os.Setenv("COLIBRI_MCP_STATE_DIR", state)
	if def == "" {
		return func() error { return nil }
	}
	start := time.Now()
	before := snapshot(def)
	return func() error {
		after := snapshot(def)
		var changed []string
		for p, fi := range after {
			if was, ok := before[p]; !ok || was.size != fi.size || !was.mod.Equal(fi.mod) {
				changed = append(changed, fmt.Sprintf("%s (modified %s)", p, fi.mod.UTC().Format("15:04:05.000")))
			}
		}
		for p := range before {
			if _, ok := after[p]; !ok {
				changed = append(changed, p+" (removed)")
			}
		}
		if len(changed) == 0 {
			return nil
		}
		sort.Strings(changed)
		return fmt.Errorf("the machine's default state folder %s changed while the tests ran (%s to %s UTC): %s; "+
			"either another colibri of this machine uses it, or a colibri started by a test had an environment of its own without COLIBRI_MCP_STATE_DIR",
			def, start.UTC().Format("15:04:05"), time.Now().UTC().Format("15:04:05"), strings.Join(changed, ", "))
	}
}

type fileState struct {
	size int64
	mod  time.Time
}

// snapshot is the files under dir (at most 10,000), by path.
func snapshot(dir string) map[string]fileState {
	out := map[string]fileState{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || len(out) >= 10000 {
			return filepath.SkipDir
		}
		if fi, err := d.Info(); err == nil && !d.IsDir() {
			out[p] = fileState{fi.Size(), fi.ModTime()}
		}
		return nil
	})
	return out
}
