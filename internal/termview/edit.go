package termview

import (
	"fmt"
	"io"
)

// Added is what add prints: the entry added, the registry kept, hints on
// the command, and what to try next.
func Added(w io.Writer, name, path, backup string, hints []string) {
	fmt.Fprintf(w, "added %q to %s\n", name, path)
	if backup != "" {
		fmt.Fprintf(w, "the previous registry is kept as %s\n", backup)
	}
	for _, h := range hints {
		fmt.Fprintln(w, "hint:", h)
	}
	fmt.Fprintf(w, "try: colibri-mcp list-tools %s\n", name)
}

// Initialized is what init prints before the editors' snippet: the
// registry written, the one it replaced, the demo server it holds (when
// installed), and how to add servers.
func Initialized(w io.Writer, path, backup, demo string) {
	fmt.Fprintf(w, "wrote %s\n", path)
	if backup != "" {
		fmt.Fprintf(w, "the previous registry is kept as %s\n", backup)
	}
	if demo != "" {
		fmt.Fprintf(w, "it holds the demo server (%s): try 'colibri-mcp list-tools demo'\n", demo)
	}
	fmt.Fprintf(w, "add servers with 'colibri-mcp add NAME -- COMMAND [ARGS…]', or 'colibri-mcp import --from EDITOR --write'\n\n")
}
