// Command colibri-sandbox is colibri-mcp's sandbox launcher on its own: the
// same launcher as `colibri-mcp __colibri_sandbox_launcher`
// (internal/sandbox/early, which acts from its init), in a binary of
// 1.5 MiB rather than colibri's 17 (as make builds them), whose start the Go runtime makes
// cheaper (fewer itabs and functions to set up, fewer pages to touch).
// colibri-mcp uses it when it is installed beside it
// (libexec/colibri-mcp/colibri-sandbox, or the same folder) and
// re-executes itself otherwise. Nothing but colibri starts it.
package main

import (
	"os"
	"syscall"

	_ "github.com/colibri-mcp/colibri-mcp/internal/sandbox/early" // the launcher: confines and execs from its init
)

func main() {
	// Reached only when the arguments are not a launcher's.
	os.Stderr.WriteString("colibri-sandbox: colibri-mcp's sandbox launcher; colibri-mcp starts it itself\n")
	syscall.Exit(2)
}
