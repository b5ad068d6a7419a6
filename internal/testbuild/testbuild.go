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
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/pin"
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
// child that inherits its environment) at a pin file in dir
// (COLIBRI_MCP_PIN_FILE), never at the machine's default (docs/registry.md#settings: /var/db/colibri/pins.json as root, which is how CI runs), so
// that a test run never changes what the next run, or the operator's
// service, trusts. A test that wants pins of its own sets the variable
// again in its child's environment (the last value wins). Call it from
// TestMain before m.Run; the check it returns, after m.Run, fails when the
// default pin file changed anyway (a test gave a colibri an environment of
// its own without COLIBRI_MCP_PIN_FILE).
func IsolatePins(dir string) (check func() error) {
	os.Setenv("COLIBRI_MCP_PIN_FILE", filepath.Join(dir, "pins.json"))
	def, err := pin.DefaultPath(os.Geteuid(), os.LookupEnv)
	if err != nil {
		return func() error { return nil }
	}
	before, beforeErr := os.Lstat(def)
	return func() error {
		after, afterErr := os.Lstat(def)
		switch {
		case (beforeErr == nil) != (afterErr == nil):
		case beforeErr != nil:
			return nil
		case os.SameFile(before, after) && before.Size() == after.Size() && before.ModTime().Equal(after.ModTime()):
			return nil
		}
		return fmt.Errorf("the tests changed the machine's default pin file %s: a colibri started by a test had no COLIBRI_MCP_PIN_FILE of its own", def)
	}
}
