package pin

// The work of `colibri-mcp pins`: listing, diffing, accepting and
// resetting one server's pins, said for a person (or as JSON). The command
// line gives the registry's server names (the registry is not this
// package's) and maps the errors: a *NotFoundError or an *UnreviewedError
// is the person's to fix; any other is the pin file's (a configuration
// error).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
)

// Known checks that server is one the pin file or the registry (its server
// names, registry) knows, with did-you-mean among both.
func (s *Store) Known(server string, registry []string) error {
	known, err := s.Servers()
	if err != nil {
		return err
	}
	if slices.Contains(known, server) || slices.Contains(registry, server) {
		return nil
	}
	known = append(known, registry...)
	return &NotFoundError{What: "server", Name: server, Near: suggest.Closest(server, known), Known: known}
}

// List writes the pins of server ("" for every server): a server of the
// registry that was never listed has none.
func (s *Store) List(w io.Writer, server string, registry []string, asJSON bool) error {
	report, err := s.Report(server)
	var nf *NotFoundError
	if errors.As(err, &nf) && s.Known(server, registry) == nil {
		report, err = []ServerPins{}, nil // in the registry, not listed yet
	}
	if err != nil {
		return err
	}
	if asJSON {
		writeJSON(w, map[string]any{"pin_file": s.Path(), "servers": report})
		return nil
	}
	WriteReport(w, s.Path(), report)
	return nil
}

// ShowDiff writes what changed in server's tools since they were pinned,
// and records that it was shown: what was shown, and only that, is what
// AcceptShown accepts. A server never pinned has no change.
func (s *Store) ShowDiff(w io.Writer, server string, asJSON bool) error {
	diffs, err := s.Diff(server)
	var nf *NotFoundError
	if errors.As(err, &nf) {
		diffs, err = []ToolDiff{}, nil // in the registry, never pinned: nothing changed
	}
	if err != nil {
		return err
	}
	if asJSON {
		writeJSON(w, map[string]any{"server": server, "changes": diffs})
	} else {
		WriteDiff(w, server, diffs)
		if len(diffs) > 0 {
			fmt.Fprintf(w, "\naccept with: colibri-mcp pins accept %s [NAME…] (tool:NAME, prompt:NAME, template:URITEMPLATE, resource:URI, instructions, or a bare name of any kind)\n", server)
		}
	}
	return s.Reviewed(server, diffs)
}

// AcceptShown accepts the changes of server's tools (of the tools named)
// that ShowDiff showed, and says which.
func (s *Store) AcceptShown(w io.Writer, server string, registry []string, names []string) error {
	if err := s.Known(server, registry); err != nil {
		return err
	}
	accepted, err := s.AcceptReviewed(server, names...)
	var unreviewed *UnreviewedError
	var nf *NotFoundError
	switch {
	case errors.As(err, &unreviewed):
		if len(accepted) > 0 {
			fmt.Fprintf(w, "%s: accepted %s\n", server, describeTaken(accepted))
		}
		return err
	case errors.Is(err, ErrNothingPending):
		fmt.Fprintf(w, "%s: nothing to accept (colibri-mcp pins diff %s reads its tools again)\n", server, server)
		return nil
	case errors.As(err, &nf) && nf.What == "server":
		// In the registry, never pinned.
		fmt.Fprintf(w, "%s: nothing to accept: its tools were never pinned\n", server)
		return nil
	case err != nil:
		return err
	}
	fmt.Fprintf(w, "%s: accepted %s\n", server, describeTaken(accepted))
	return nil
}

// ResetShown forgets server's pins, and says so.
func (s *Store) ResetShown(w io.Writer, server string, registry []string) error {
	if err := s.Reset(server); err != nil {
		var nf *NotFoundError
		if !errors.As(err, &nf) {
			return err
		}
		if err := s.Known(server, registry); err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: no pins to forget\n", server)
		return nil
	}
	fmt.Fprintf(w, "%s: pins forgotten; its next listing is pinned afresh\n", server)
	return nil
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
