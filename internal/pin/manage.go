package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
)

// NotFoundError is a server, or a definition (What "tool", "prompt", …,
// "definition" for a bare name), the pin file does not know; Near is the
// closest name it does know ("" when none is close).
type NotFoundError struct {
	What, Name, Server, Near string
	Known                    []string
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	if e.What == "server" {
		fmt.Fprintf(&b, "no pins for server %q", e.Name)
	} else {
		fmt.Fprintf(&b, "server %q has no pinned or changed %s %q", e.Server, e.What, e.Name)
	}
	if e.Near != "" {
		fmt.Fprintf(&b, ": did you mean %q?", e.Near)
	}
	return b.String()
}

func notFound(what, server, name string, known []string) *NotFoundError {
	return &NotFoundError{What: what, Name: name, Server: server, Near: suggest.Closest(name, known), Known: known}
}

// ErrNothingPending is Accept with no change to accept.
var ErrNothingPending = errors.New("no change to accept")

// Change is one definition that differs from its pin (list_tools'
// "changed": tools only, Kind left out).
type Change struct {
	// Kind is set for a definition other than a tool's (`pins --json`).
	Kind Kind     `json:"kind,omitempty"`
	Name string   `json:"name"`
	What []string `json:"what"`
}

// Changes are v's changes in name order.
func (v Verdict) Changes() []Change {
	out := make([]Change, 0, len(v.Changed))
	for _, name := range sortedKeys(v.Changed) {
		out = append(out, Change{Name: name, What: v.Changed[name]})
	}
	return out
}

// ServerPins is one server's pins, as `colibri-mcp pins --json` shows them.
type ServerPins struct {
	Server string `json:"server"`
	// Source is the release (NAME@VERSION of the entry's "source") the
	// pins were made with, where the entry had one.
	Source string    `json:"source,omitempty"`
	Sets   []SetPins `json:"capability_sets"`
}

// SetPins is the pins of one capability set.
type SetPins struct {
	Capabilities string    `json:"capabilities"`
	Pinned       time.Time `json:"pinned"`
	Tools        []ToolPin `json:"tools"`
	// The other kinds pinned, when any is: prompts by name, templates by
	// uriTemplate, resources by uri, the instructions.
	Prompts      []ToolPin `json:"prompts,omitempty"`
	Templates    []ToolPin `json:"templates,omitempty"`
	Resources    []ToolPin `json:"resources,omitempty"`
	Instructions []ToolPin `json:"instructions,omitempty"`
	// Changed are the definitions of every kind pending (Kind set for all
	// but tools).
	Changed []Change `json:"changed"`
}

// ToolPin is one pinned definition: a tool's or prompt's name, a
// template's uriTemplate, a resource's uri, InstructionsName.
type ToolPin struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
	// Flags are what the poisoning scan found in it; Reviewed, that a
	// person accepted it.
	Flags    []Flag `json:"flags,omitempty"`
	Reviewed bool   `json:"reviewed,omitempty"`
}

func toolPin(k Kind, name string, e *Entry) ToolPin {
	return ToolPin{Name: name, Digest: e.Digest, Reviewed: e.Reviewed, Flags: e.Flags.current(k, e.Definition)}
}

// pinsOf is where SetPins lists kind k's pins.
func (p *SetPins) pinsOf(k Kind) *[]ToolPin {
	switch k {
	case KindPrompt:
		return &p.Prompts
	case KindTemplate:
		return &p.Templates
	case KindResource:
		return &p.Resources
	case KindInstructions:
		return &p.Instructions
	}
	return &p.Tools
}

// Servers are the servers the pin file has pins for, in order.
func (s *Store) Servers() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	return s.serverNames(), nil
}

// Report describes the pins of server, or of every server when it is "".
func (s *Store) Report(server string) ([]ServerPins, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	names := s.serverNames()
	if server != "" {
		if !slices.Contains(names, server) {
			return nil, notFound("server", "", server, names)
		}
		names = []string{server}
	}
	if s.file.lock != nil {
		return reportLock(s.file.lock, names), nil
	}
	out := []ServerPins{}
	for _, name := range names {
		sp := ServerPins{Server: name, Sets: []SetPins{}}
		sets := s.file.Servers[name]
		for _, caps := range sortedKeys(sets) {
			set := sets[caps]
			if set.Entry != nil && set.Entry.Source != "" && (sp.Source == "" || caps == NoCaps) {
				sp.Source = set.Entry.Source
			}
			p := SetPins{Capabilities: caps, Pinned: set.Pinned, Tools: []ToolPin{}, Changed: []Change{}}
			for _, k := range Kinds {
				pinned, pending := set.pins(k)
				list := p.pinsOf(k)
				for _, name := range sortedKeys(pinned) {
					*list = append(*list, toolPin(k, name, pinned[name]))
				}
				for _, name := range sortedKeys(pending) {
					c := Change{Kind: k, Name: name, What: pending[name].What}
					if k == KindTool {
						c.Kind = ""
					}
					p.Changed = append(p.Changed, c)
				}
			}
			sp.Sets = append(sp.Sets, p)
		}
		out = append(out, sp)
	}
	return out, nil
}

// Accept makes the pending definitions of server (those the selectors
// take, or all when none is given; see ParseSelector) its pins, in every
// capability set. It returns what it took. A selector the pin file does
// not know is a *NotFoundError with the closest name; a known definition
// with no change is ErrNothingPending when nothing at all is accepted.
//
// Accept takes what is pending now, whether or not anyone saw it: `pins
// accept` uses AcceptReviewed.
func (s *Store) Accept(server string, selectors ...string) ([]Taken, error) {
	return s.accept(server, false, selectors)
}

// AcceptReviewed is Accept of the pending definitions that Reviewed marked
// (those `pins diff` showed), only. Between a diff and an accept the server
// may list another definition (a server that alternates two of them,
// benign while an operator looks): that one is not accepted, and the
// accept fails with an *UnreviewedError naming it, after accepting the
// others.
func (s *Store) AcceptReviewed(server string, selectors ...string) ([]Taken, error) {
	return s.accept(server, true, selectors)
}

// UnreviewedError is AcceptReviewed's refusal of changes that `pins diff`
// did not show (or that changed since it did).
type UnreviewedError struct {
	Server string
	Tools  []string // as selectors: tool:NAME, prompt:NAME, …
}

func (e *UnreviewedError) Error() string {
	return fmt.Sprintf("not accepted: the definition of %s pending now is not the one `colibri-mcp pins diff %s` showed (never shown, or the server listed another since); review it with pins diff, then accept",
		strings.Join(e.Tools, ", "), e.Server)
}

// Reviewed marks the pending definitions diffs show (each by its digest)
// as reviewed: AcceptReviewed accepts those while they stay pending.
func (s *Store) Reviewed(server string, diffs []ToolDiff) error {
	if len(diffs) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locked() {
		return nil // a lock is never written: what a diff shows under it is accepted where the lock is made
	}
	return s.update(func(f *File) bool {
		changed := false
		for _, d := range diffs {
			_, pending := f.Servers[server][d.Caps].pins(d.kind())
			if q := pending[d.Name]; q != nil && q.Digest == d.Digest && !q.Reviewed {
				q.Reviewed = true
				changed = true
			}
		}
		return changed
	})
}

func (s *Store) accept(server string, reviewed bool, selectors []string) ([]Taken, error) {
	sel := make([]Selector, len(selectors))
	for i, a := range selectors {
		sel[i] = ParseSelector(a)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	if s.locked() {
		return nil, s.lockedError()
	}
	if err := s.known(server); err != nil {
		return nil, err
	}
	entry := s.cfg.Entries[server]
	var accepted, unreviewed []Taken
	recorded := false
	err := s.update(func(f *File) bool {
		accepted, unreviewed, recorded = nil, nil, false
		sets, ok := f.Servers[server]
		if !ok {
			return false
		}
		if entry != nil && len(sel) == 0 {
			// Accepting a server's changes is accepting its registry entry
			// as it is now (an upgrade reviewed), even when no definition
			// changed with it.
			for _, set := range sets {
				if set.Entry == nil || set.Entry.Digest != entry.Digest {
					set.Entry = entry
					recorded = true
				}
			}
		}
		for _, caps := range sortedKeys(sets) {
			set := sets[caps]
			for _, k := range Kinds {
				_, pending := set.pins(k)
				for _, name := range sortedKeys(pending) {
					if !selected(sel, k, name) {
						continue
					}
					q := pending[name]
					if reviewed && !q.Reviewed {
						unreviewed = append(unreviewed, Taken{Kind: k, Name: name})
						continue
					}
					pinnedP, pendingP := set.maps(k)
					(*pinnedP)[name] = &Entry{Digest: q.Digest, Definition: q.Definition, Reviewed: true, Flags: q.Flags} // a person took it: the lock marks it reviewed
					delete(*pendingP, name)
					accepted = append(accepted, Taken{Kind: k, Name: name})
				}
			}
		}
		// A flagged definition pinned at first sight is accepted by
		// marking it reviewed: "pin_scan": "block" and a lock then trust it.
		for _, caps := range sortedKeys(sets) {
			for _, k := range Kinds {
				pinned, _ := sets[caps].pins(k)
				for _, name := range sortedKeys(pinned) {
					if p := pinned[name]; selected(sel, k, name) && !p.Reviewed && len(p.Flags.current(k, p.Definition)) > 0 {
						p.Reviewed = true
						accepted = append(accepted, Taken{Kind: k, Name: name})
					}
				}
			}
		}
		if len(accepted) > 0 && entry != nil {
			for _, set := range sets {
				set.Entry = entry
			}
		}
		return len(accepted) > 0 || recorded
	})
	if err != nil {
		return nil, err
	}
	sets, ok := s.file.Servers[server]
	if !ok {
		return nil, notFound("server", "", server, sortedKeys(s.file.Servers))
	}
	for _, one := range sel {
		if err := knownIn(sets, server, one); err != nil {
			return sortTaken(accepted), err
		}
	}
	accepted = sortTaken(accepted)
	if len(unreviewed) > 0 {
		unreviewed = sortTaken(unreviewed)
		names := make([]string, len(unreviewed))
		for i, u := range unreviewed {
			names[i] = u.String()
		}
		return accepted, &UnreviewedError{Server: server, Tools: names}
	}
	if len(accepted) == 0 {
		if recorded {
			return nil, ErrEntryRecorded
		}
		return nil, ErrNothingPending
	}
	return accepted, nil
}

// ErrEntryRecorded is Accept with no change to accept, which recorded the
// server's registry entry as it is now (an upgrade that changed no
// definition): it is ErrNothingPending too.
var ErrEntryRecorded = fmt.Errorf("%w; the registry entry as it is now is recorded with the pins", ErrNothingPending)

// EntryChange says how server's registry entry now (Configure's) stands
// against the one its pins were made with: changed lists the members that
// differ (nil: the same), known is false when the pins hold none (pinned
// by an older colibri, or no Configure).
func (s *Store) EntryChange(server string) (changed []string, known bool, err error) {
	then, now, err := s.entries(server)
	if err != nil || then == nil || now == nil {
		return nil, false, err
	}
	return then.changed(now), true, nil
}

// entries are server's registry entry as its pins recorded it (then) and
// as Configure says it is (now); nil where there is none.
func (s *Store) entries(server string) (then, now *Fingerprint, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, nil, err
	}
	now = s.cfg.Entries[server]
	if s.file.lock != nil {
		if ls := s.file.lock.Servers[server]; ls != nil {
			then = ls.RegistryEntry
		}
	} else {
		sets := s.file.Servers[server]
		for _, caps := range sortedKeys(sets) {
			if e := sets[caps].Entry; e != nil && (then == nil || caps == NoCaps) {
				then = e
			}
		}
	}
	return then, now, nil
}

// knownIn fails with a *NotFoundError when no kind sel takes holds its
// name, pinned or pending, in any of sets.
func knownIn(sets map[string]*Set, server string, sel Selector) error {
	known := map[string]bool{}
	for _, set := range sets {
		for _, k := range Kinds {
			if sel.Kind != "" && sel.Kind != k {
				continue
			}
			pinned, pending := set.pins(k)
			for _, m := range []map[string]*Entry{pinned, pending} {
				for name := range m {
					if name == sel.Name {
						return nil
					}
					known[name] = true
				}
			}
		}
	}
	what := string(sel.Kind)
	if what == "" {
		what = "definition"
	}
	return notFound(what, server, sel.Name, sortedKeys(known))
}

// sortTaken is taken in kind order, then by name, each once.
func sortTaken(taken []Taken) []Taken {
	rank := func(k Kind) int { return slices.Index(Kinds, k) }
	slices.SortFunc(taken, func(a, b Taken) int {
		if c := rank(a.Kind) - rank(b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return slices.Compact(taken)
}

// Reset forgets every pin of server: its next listing is pinned afresh.
func (s *Store) Reset(server string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return err
	}
	if s.locked() {
		return s.lockedError()
	}
	if err := s.known(server); err != nil {
		return err
	}
	found := false
	err := s.update(func(f *File) bool {
		_, found = f.Servers[server]
		delete(f.Servers, server)
		return found
	})
	if err != nil {
		return err
	}
	if !found {
		return notFound("server", "", server, sortedKeys(s.file.Servers))
	}
	return nil
}

// known fails, before anything is locked or created, when the pin file
// has no pins for server.
func (s *Store) known(server string) error {
	if err := s.refresh(); err != nil {
		return err
	}
	if names := s.serverNames(); !slices.Contains(names, server) {
		return notFound("server", "", server, names)
	}
	return nil
}

// Definition is one pinned tool definition.
type Definition struct {
	Server string
	// Caps is the capability set it was pinned for (NoCaps: the list
	// list_tools shows).
	Caps string
	Tool *mcp.Tool
}

// Definitions are the tools pinned for server (every capability set, NoCaps
// first, each in name order): what the server listed when it was trusted,
// whether or not it runs now. Pending changes are not among them.
func (s *Store) Definitions(server string) ([]Definition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	if s.file.lock != nil {
		return lockDefinitions(s.file.lock, server), nil
	}
	sets := s.file.Servers[server]
	capsOrder := sortedKeys(sets)
	slices.SortStableFunc(capsOrder, func(a, b string) int {
		if (a == NoCaps) != (b == NoCaps) {
			if a == NoCaps {
				return -1
			}
			return 1
		}
		return 0
	})
	var out []Definition
	for _, caps := range capsOrder {
		set := sets[caps]
		for _, name := range sortedKeys(set.Tools) {
			var t mcp.Tool
			if err := json.Unmarshal(set.Tools[name].Definition, &t); err != nil {
				continue
			}
			out = append(out, Definition{Server: server, Caps: caps, Tool: &t})
		}
	}
	return out, nil
}

// Unusable is a Store whose every use fails with err: a pin file that has
// no place (no HOME), reported where pins are needed, never taken for none.
func Unusable(err error) *Store {
	return &Store{broken: &ConfigError{Path: "(none)", Err: err}}
}
