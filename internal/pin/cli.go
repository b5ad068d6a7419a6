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
	"strings"

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

// EntryStatus is how a server's registry entry stands against the one its
// pins were made with, as `pins diff` says it.
type EntryStatus struct {
	// Changed are the entry's members that differ (args, command, env…);
	// empty: the same entry.
	Changed []string `json:"changed"`
	// Recorded is false when the pins hold no entry (an older colibri
	// pinned them): nothing can be said.
	Recorded bool `json:"recorded"`
	// Unversioned is the package an entry started by a package runner
	// names without a version (npx -y PKG): its upgrades change no member.
	Unversioned string `json:"unversioned,omitempty"`
	// PinnedSource and Source are the release (NAME@VERSION of the
	// entry's "source") the pins were made with and the one the entry
	// names now, where the entry has one.
	PinnedSource string `json:"pinned_source,omitempty"`
	Source       string `json:"source,omitempty"`
}

// Says is the status in words, or "" when there is nothing to say (no
// change of either kind).
func (e EntryStatus) Says(server string, changes int) string {
	var b strings.Builder
	switch {
	case len(e.Changed) > 0:
		fmt.Fprintf(&b, "the registry entry changed since pinning (%s): an upgrade — review and accept", strings.Join(e.Changed, ", "))
	case changes == 0:
		return ""
	case e.Recorded:
		b.WriteString("same registry entry, changed definitions: review before accepting")
	default:
		b.WriteString("no registry entry was recorded with these pins (an older colibri-mcp pinned them): review before accepting; accepting records it")
	}
	switch {
	case e.PinnedSource != "" && e.Source != "" && e.PinnedSource != e.Source:
		fmt.Fprintf(&b, "\nsource: %s when pinned, %s now: the publisher's release", e.PinnedSource, e.Source)
	case e.Source != "" && e.PinnedSource == e.Source && len(e.Changed) == 0:
		fmt.Fprintf(&b, "\nsource: %s, as when pinned: the same release changed its definitions", e.Source)
	case e.Source != "" && e.PinnedSource == "":
		fmt.Fprintf(&b, "\nsource: %s now (the pins recorded none)", e.Source)
	}
	if e.Unversioned != "" {
		fmt.Fprintf(&b, "\nthe entry names no version of %s, so colibri cannot tell an upgrade from a change: pin one (colibri-mcp add --from-registry, or %s@VERSION in args)", e.Unversioned, e.Unversioned)
	}
	return b.String()
}

// ShowDiff writes what changed in server's definitions since they were
// pinned, with how its registry entry stands (unversioned: the package
// the entry names without a version, if any), and records that it was
// shown: what was shown, and only that, is what AcceptShown accepts. A
// server never pinned has no change. Under a lock it shows what the lists
// read by this process showed that the lock does not trust, and how to
// renew the lock.
func (s *Store) ShowDiff(w io.Writer, server string, asJSON bool, unversioned string) error {
	diffs, err := s.Diff(server)
	var nf *NotFoundError
	if errors.As(err, &nf) {
		diffs, err = []ToolDiff{}, nil // in the registry, never pinned: nothing changed
	}
	if err != nil {
		return err
	}
	changed, recorded, err := s.EntryChange(server)
	if err != nil {
		return err
	}
	entry := EntryStatus{Changed: changed, Recorded: recorded, Unversioned: unversioned}
	if then, now, err := s.entries(server); err == nil {
		if then != nil {
			entry.PinnedSource = then.Source
		}
		if now != nil {
			entry.Source = now.Source
		}
	}
	if entry.Changed == nil {
		entry.Changed = []string{}
	}
	locked, _ := s.Locked()
	if asJSON {
		writeJSON(w, map[string]any{"server": server, "changes": diffs, "registry_entry": entry, "locked": locked})
	} else {
		WriteDiff(w, server, diffs)
		if says := entry.Says(server, len(diffs)); says != "" {
			fmt.Fprintf(w, "\n%s\n", says)
		}
		switch {
		case len(diffs) > 0 && locked:
			fmt.Fprintf(w, "\nnot in the locked pin file: %v\n", s.lockedError())
		case len(diffs) > 0:
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
	case errors.Is(err, ErrEntryRecorded):
		fmt.Fprintf(w, "%s: no definition to accept; its registry entry as it is now is recorded with its pins\n", server)
		return nil
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
