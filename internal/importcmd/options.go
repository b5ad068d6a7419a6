package importcmd

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf"
	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
)

// ParseFrom reads --from: an editor colibri reads, or an error naming the
// closest one (or them all).
func ParseFrom(name string) (editorconf.Format, error) {
	names := editorconf.FormatNames()
	if slices.Contains(names, name) {
		return editorconf.Format(name), nil
	}
	if near := suggest.Closest(name, names); near != "" {
		return "", fmt.Errorf("--from %q: did you mean %q?", name, near)
	}
	return "", fmt.Errorf("--from %q: want one of %s", name, strings.Join(names, ", "))
}

// Check refuses the options that do not go together; its message names
// the flags.
func (o Options) Check() error {
	switch {
	case o.File == "" && o.From == "":
		return fmt.Errorf("give the editor's FILE, or --from EDITOR (%s) to read its usual file", strings.Join(editorconf.FormatNames(), ", "))
	case o.Write && o.JSON:
		return errors.New("--json prints the entries and --write merges them into the registry: give one")
	case o.Apply && (!o.Write || o.From == ""):
		return errors.New("--apply rewrites the editor's file after --write, and needs --from EDITOR")
	case o.Each && !o.Apply:
		return errors.New("--each rewrites each imported server's entry in the editor's file: it goes with --apply")
	case o.EnvFile != "" && !o.Write:
		return errors.New("--env-file writes the moved secrets with --write")
	}
	return nil
}
