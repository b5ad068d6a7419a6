package pin

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// ToolDiff is one pending change of a server's definition (a tool's, a
// prompt's, …): the pinned definition against the one seen since.
type ToolDiff struct {
	Caps string `json:"capabilities"`
	// Kind is what the definition is of; Name its key (a tool's or
	// prompt's name, a template's uriTemplate, a resource's uri,
	// InstructionsName).
	Kind Kind     `json:"kind"`
	Name string   `json:"name"`
	What []string `json:"what"`
	// Digest is the new definition's: what Reviewed marks as shown.
	Digest string `json:"digest"`
	// Old and New are the definitions' text members (title, description),
	// old and new; absent members are "".
	OldTitle       string `json:"old_title,omitempty"`
	NewTitle       string `json:"new_title,omitempty"`
	OldDescription string `json:"old_description,omitempty"`
	NewDescription string `json:"new_description,omitempty"`
	// OldInstructions and NewInstructions are a server's instructions.
	OldInstructions string `json:"old_instructions,omitempty"`
	NewInstructions string `json:"new_instructions,omitempty"`
	// Flags are what the poisoning scan found in the new definition; a
	// definition pinned at first sight that is flagged and that no person
	// accepted is listed with What "flagged" (and no paths).
	Flags []Flag `json:"flags,omitempty"`
	// Paths are the other members' paths added, removed or changed (a
	// tool's schemas and annotations, a prompt's arguments, a template's
	// or resource's name and mimeType).
	Paths []PathChange `json:"paths"`
}

// kind is d's kind; a diff decoded from an older colibri's JSON has none:
// a tool's.
func (d ToolDiff) kind() Kind {
	if d.Kind == "" {
		return KindTool
	}
	return d.Kind
}

// Selector is what `pins accept` takes to accept d alone.
func (d ToolDiff) Selector() Selector { return Selector{Kind: d.kind(), Name: d.Name} }

// PathChange is one JSON path of a definition's inputSchema, outputSchema
// or annotations that was added, removed or changed.
type PathChange struct {
	Op   string          `json:"op"`   // added, removed, changed
	Path string          `json:"path"` // e.g. inputSchema/properties/notes
	Old  json.RawMessage `json:"old,omitempty"`
	New  json.RawMessage `json:"new,omitempty"`
}

// Diff is every pending change of server's definitions, as the pins of
// each capability set see it: by capability set, then kind (Kinds' order),
// then name.
func (s *Store) Diff(server string) ([]ToolDiff, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	if s.locked() {
		// Nothing is recorded under a lock: what the lists read by this
		// process showed that the lock does not trust.
		return s.diffLocked(server), nil
	}
	sets, ok := s.file.Servers[server]
	if !ok {
		return nil, notFound("server", "", server, sortedKeys(s.file.Servers))
	}
	out := []ToolDiff{}
	for _, caps := range sortedKeys(sets) {
		set := sets[caps]
		for _, k := range Kinds {
			pinned, pending := set.pins(k)
			for _, name := range sortedKeys(pending) {
				q := pending[name]
				var old json.RawMessage
				if p := pinned[name]; p != nil {
					old = p.Definition
				}
				d := diffOf(caps, k, name, q.What, old, q.Definition)
				d.Digest = q.Digest
				d.Flags = q.Flags.current(k, q.Definition)
				out = append(out, d)
			}
			for _, name := range sortedKeys(pinned) {
				p := pinned[name]
				if p.Reviewed || pending[name] != nil {
					continue
				}
				found := p.Flags.current(k, p.Definition)
				if len(found) == 0 {
					continue
				}
				out = append(out, ToolDiff{Caps: caps, Kind: k, Name: name, What: []string{WhatFlagged}, Digest: p.Digest, Flags: found, Paths: []PathChange{}})
			}
		}
	}
	return out, nil
}

// WhatFlagged is the "what" of a definition held back only because the
// poisoning scan flagged it ("pin_scan": "block", or a lock).
const WhatFlagged = "flagged"

// textMembers are the members a diff shows as text, line by line; the
// others are shown by JSON path.
var textMembers = map[string]bool{"title": true, "description": true, "instructions": true}

func diffOf(caps string, k Kind, name string, what []string, old, new json.RawMessage) ToolDiff {
	var a, b map[string]any
	_ = json.Unmarshal(old, &a)
	_ = json.Unmarshal(new, &b)
	d := ToolDiff{Caps: caps, Kind: k, Name: name, What: what, Paths: []PathChange{}}
	d.OldTitle, d.NewTitle = str(a["title"]), str(b["title"])
	d.OldDescription, d.NewDescription = str(a["description"]), str(b["description"])
	d.OldInstructions, d.NewInstructions = str(a["instructions"]), str(b["instructions"])
	for _, f := range kindFields[k] {
		if !textMembers[f.key] {
			diffJSON(f.key, a[f.key], b[f.key], &d.Paths)
		}
	}
	return d
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// maxPaths bounds the paths one tool's diff lists: a schema may be huge.
const maxPaths = 200

// diffJSON appends the paths under path where a and b differ: objects are
// walked key by key; anything else is compared whole.
func diffJSON(path string, a, b any, out *[]PathChange) {
	if len(*out) >= maxPaths {
		return
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	switch {
	case a == nil && b == nil:
	case a == nil:
		*out = append(*out, PathChange{Op: "added", Path: path, New: enc(b)})
	case b == nil:
		*out = append(*out, PathChange{Op: "removed", Path: path, Old: enc(a)})
	case aok && bok:
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			diffJSON(path+"/"+escape(k), am[k], bm[k], out)
		}
	default:
		ea, eb := enc(a), enc(b)
		if string(ea) != string(eb) {
			*out = append(*out, PathChange{Op: "changed", Path: path, Old: ea, New: eb})
		}
	}
}

func enc(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// escape writes a key as a JSON Pointer token (RFC 6901).
func escape(k string) string {
	return pointerEscaper.Replace(k)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// maxShown bounds one value, text block, tool name or schema path printed
// by WriteDiff and WriteReport: each is a hosted server's, of any length.
const maxShown = 2000

// WriteDiff prints diffs for a person: for each tool, what changed, the old
// and new text of its title and description, and each schema or
// annotation path added (+), removed (-) or changed (~). The text is a
// hosted server's: print it through a filter of control characters when w
// is a terminal.
func WriteDiff(w io.Writer, server string, diffs []ToolDiff) {
	if len(diffs) == 0 {
		fmt.Fprintf(w, "%s: no change since its tools were pinned\n", server)
		return
	}
	for _, d := range diffs {
		fmt.Fprintf(w, "%s/%s (%s, capabilities: %s): %s\n", server, clip(d.Name), d.kind(), d.Caps, strings.Join(d.What, ", "))
		text := func(label, old, new string) {
			if old == new {
				return
			}
			fmt.Fprintf(w, "  %s:\n", label)
			for _, l := range lines(old) {
				fmt.Fprintf(w, "    - %s\n", l)
			}
			for _, l := range lines(new) {
				fmt.Fprintf(w, "    + %s\n", l)
			}
		}
		text("title", d.OldTitle, d.NewTitle)
		text("description", d.OldDescription, d.NewDescription)
		text("instructions", d.OldInstructions, d.NewInstructions)
		WriteFlags(w, "  ", d.Flags)
		for _, p := range d.Paths {
			switch p.Op {
			case "added":
				fmt.Fprintf(w, "  + %s: %s\n", clip(p.Path), clip(string(p.New)))
			case "removed":
				fmt.Fprintf(w, "  - %s: %s\n", clip(p.Path), clip(string(p.Old)))
			default:
				fmt.Fprintf(w, "  ~ %s: %s -> %s\n", clip(p.Path), clip(string(p.Old)), clip(string(p.New)))
			}
		}
		if len(d.Paths) >= maxPaths {
			fmt.Fprintf(w, "  … (more paths not shown)\n")
		}
	}
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(clip(s), "\n")
}

func clip(s string) string {
	if r := []rune(s); len(r) > maxShown {
		return string(r[:maxShown]) + "…"
	}
	return s
}

// WriteReport prints the pins for a person: each server, each capability
// set, its tools and the changes pending.
func WriteReport(w io.Writer, path string, servers []ServerPins) {
	fmt.Fprintf(w, "pin file %s\n", path)
	if len(servers) == 0 {
		fmt.Fprintln(w, "  no server pinned yet (a server's first tool list is pinned)")
	}
	for _, sp := range servers {
		if sp.Source != "" {
			fmt.Fprintf(w, "%s: pinned from %s\n", sp.Server, sp.Source)
		}
		for _, set := range sp.Sets {
			tools := "tools"
			if len(set.Tools) == 1 {
				tools = "tool"
			}
			fmt.Fprintf(w, "%s (capabilities: %s): %d %s pinned %s", sp.Server, set.Capabilities, len(set.Tools), tools, set.Pinned.Format(time.RFC3339))
			if n := len(set.Changed); n > 0 {
				fmt.Fprintf(w, ", %d changed (colibri-mcp pins diff %s)", n, sp.Server)
			}
			fmt.Fprintln(w)
			for _, k := range Kinds {
				for _, t := range *set.pinsOf(k) {
					name := t.Name
					if k != KindTool {
						name = Selector{Kind: k, Name: t.Name}.String()
					}
					mark := ""
					if len(t.Flags) > 0 && !t.Reviewed {
						mark = "  FLAGGED (colibri-mcp pins accept " + sp.Server + " " + clip(Selector{Kind: k, Name: t.Name}.String()) + " after review)"
					} else if len(t.Flags) > 0 {
						mark = "  flagged, accepted"
					}
					fmt.Fprintf(w, "  %-32s %s%s\n", clip(name), t.Digest[:len("sha256:")+12], mark)
					WriteFlags(w, "    ", t.Flags)
				}
			}
			for _, c := range set.Changed {
				name := c.Name
				if c.Kind != "" {
					name = Selector{Kind: c.Kind, Name: c.Name}.String()
				}
				fmt.Fprintf(w, "  ! %-30s changed: %s\n", clip(name), strings.Join(c.What, ", "))
			}
		}
	}
}
