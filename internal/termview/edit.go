package termview

import (
	"fmt"
	"io"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/mcpregistry"
)

// Added is what add prints: the entry added, the registry kept, hints on
// the command, and what to try next.
func Added(w io.Writer, name, path, backup string, replaced bool, hints []string) {
	if replaced {
		fmt.Fprintf(w, "replaced %q in %s\n", name, path)
	} else {
		fmt.Fprintf(w, "added %q to %s\n", name, path)
	}
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

// FromRegistry is what add --from-registry wrote, for AddedFromRegistry.
type FromRegistry struct {
	Name, Path, Backup string
	Replaced           bool // --replace replaced an entry of that name
	// EnvFile is --env-file, when colibri was given one: where the
	// variables to set may go.
	EnvFile string
	Plan    *mcpregistry.Plan
	Hints   []string
}

// AddedFromRegistry is what add --from-registry prints: the entry written
// and the release it runs, the variables to set where colibri runs (never
// their values), those left out, and what else the registry said.
func AddedFromRegistry(w io.Writer, a FromRegistry) {
	p := a.Plan
	src := p.Entry.Source
	verb := "added %q to %s"
	if a.Replaced {
		verb = "replaced %q in %s"
	}
	fmt.Fprintf(w, verb+": %s (%s@%s from %s)\n", a.Name, a.Path, p.What, src.Name, src.Version, src.Registry)
	if a.Backup != "" {
		fmt.Fprintf(w, "the previous registry is kept as %s\n", a.Backup)
	}
	for _, n := range p.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	if len(p.Runtime) > 0 {
		fmt.Fprintf(w, "runtime arguments written (--accept-runtime-args): %s\n", strings.Join(p.Runtime, " "))
	}
	if len(p.Set) > 0 {
		where := "a NAME=value line in a mode-0600 file that 'colibri-mcp --env-file FILE' loads, or provider.env on FreeBSD"
		if a.EnvFile != "" {
			where = "a NAME=value line in " + a.EnvFile + " (your --env-file), or provider.env on FreeBSD"
		}
		fmt.Fprintf(w, "set where colibri runs (%s):\n", where)
		for _, v := range p.Set {
			fmt.Fprintf(w, "  %s%s\n", v.Ref, varNote(v))
		}
	}
	if len(p.Optional) > 0 {
		fmt.Fprintln(w, "optional, left out (add them to the entry to use them):")
		for _, v := range p.Optional {
			fmt.Fprintf(w, "  %s%s\n", v.Name, varNote(v))
		}
	}
	if len(p.OptionalArgs) > 0 {
		fmt.Fprintf(w, "optional arguments, left out (--arg NAME=VALUE sets one): %s\n", strings.Join(p.OptionalArgs, ", "))
	}
	for _, h := range a.Hints {
		fmt.Fprintln(w, "hint:", h)
	}
	fmt.Fprintf(w, "try: colibri-mcp list-tools %s\n", a.Name)
}

func varNote(v mcpregistry.Var) string {
	var what []string
	if v.Header {
		what = append(what, "header "+v.Name)
	} else if v.Ref != "" && v.Ref != v.Name {
		what = append(what, "the server's "+v.Name)
	}
	if v.Secret {
		what = append(what, "secret")
	}
	s := ""
	if len(what) > 0 {
		s = " (" + strings.Join(what, ", ") + ")"
	}
	if v.Description != "" {
		s += ": " + v.Description
	}
	return s
}
