// Package early runs colibri as the sandbox launcher before the rest of
// colibri's packages initialize: imported by main for its side effect, its
// init checks the argv and, for the launcher, confines the process and
// execs the server, so that a sandboxed start does not pay for the
// initialization of colibri's MCP, schema and metrics packages.
package early

import (
	"os"

	"github.com/colibri-mcp/colibri-mcp/internal/sandbox"
)

func init() {
	if sandbox.IsLauncher(os.Args) {
		os.Exit(sandbox.Launch(os.Args))
	}
}
