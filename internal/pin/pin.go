// Package pin is colibri's defence against a hosted server that changes what
// its tools say after they were trusted (a "rug pull": a poisoned
// description, a widened schema, a flipped readOnlyHint, a tool renamed to
// slip past a pin by name; docs/cli.md#pinned-tool-definitions).
//
// The first list a server gives for a set of capabilities offered is pinned:
// each tool's canonical definition (name, title, description, inputSchema,
// outputSchema, annotations; never _meta or icons) and its SHA-256 digest,
// in the pin file. Every later list is compared with the pins; a tool whose
// digest differs, or whose name was not pinned, is a Change. A tool that
// disappeared is no change: it is simply gone. A server's prompts, resource
// templates, resources and instructions are pinned the same way, each kind
// on its own (CheckPrompts, CheckTemplates, CheckResources,
// CheckInstructions), and `pins accept` takes a Selector of any kind.
//
//	store := pin.Open("/var/db/colibri/pins.json")
//	v, err := store.Check("demo", pin.NoCaps, tools) // err: the file cannot be read (kind config)
//	if what := v.Changed["echo"]; what != nil { … } // e.g. ["description"]
//	err = store.Accept("demo", "echo")                // the pending definition becomes the pin
//
// The pin file is JSON, mode 0600, written atomically (a temporary file
// renamed over it) under a lock file that every colibri process sharing it
// takes, re-reading the file under the lock and merging, so that no process
// loses another's update. Digests are computed once per tool decoded (a list
// cached or kept warm is the same list), and a Check of a list already
// judged under the same pins is a map lookup.
package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Mode is what a change in a server's tool definitions does (the registry's
// "pin" key).
type Mode string

// The modes of the registry's "pin" key.
const (
	Enforce Mode = "enforce" // a changed or new tool is hidden, and refused (the default)
	Warn    Mode = "warn"    // it stays listed and callable, flagged, logged and audited
	Off     Mode = "off"     // nothing is recorded or checked
)

// What changed in a tool (list_tools' "changed" field).
const (
	WhatNew          = "new" // its name was not in the pinned set
	WhatTitle        = "title"
	WhatDescription  = "description"
	WhatInputSchema  = "inputSchema"
	WhatOutputSchema = "outputSchema"
	WhatAnnotations  = "annotations"
)

// NoCaps is the capability set of a session offered no client capability:
// the one list_tools and aggregate mode read.
const NoCaps = "none"

// Caps is the key of a set of client capabilities offered (for example
// "sampling" or "elicitation,roots"): the names sorted and joined with ",",
// NoCaps for none.
func Caps(names ...string) string {
	if len(names) == 0 {
		return NoCaps
	}
	s := slices.Clone(names)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}

// fields are the members of a tool's canonical definition, in the order
// the "what" of a change lists them.
var fields = []struct{ key, what string }{
	{"title", WhatTitle},
	{"description", WhatDescription},
	{"inputSchema", WhatInputSchema},
	{"outputSchema", WhatOutputSchema},
	{"annotations", WhatAnnotations},
}

// Canonical is a tool's canonical definition: a JSON object of its name,
// title, description, inputSchema, outputSchema and annotations, with
// object keys sorted and no insignificant space, absent and empty members
// left out. Its _meta and icons are not part of it: they speak to a client's
// display, not to the model, and servers change them freely.
func Canonical(t *mcp.Tool) ([]byte, error) {
	m := map[string]any{"name": t.Name}
	if t.Title != "" {
		m["title"] = t.Title
	}
	if t.Description != "" {
		m["description"] = t.Description
	}
	for key, v := range map[string]any{"inputSchema": t.InputSchema, "outputSchema": t.OutputSchema, "annotations": t.Annotations} {
		n, err := normal(v)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %s: %w", t.Name, key, err)
		}
		if n != nil {
			m[key] = n
		}
	}
	return json.Marshal(m) // encoding/json sorts map keys
}

// normal is v decoded into plain JSON values (maps, slices, strings,
// float64, bools), so that encoding it again is canonical whatever Go type
// held it; nil for an absent or empty value.
func normal(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if plain(v, 0) {
		// Decoded JSON already (a hosted list's schemas are): encoding it
		// is canonical as it is, with no round trip.
		if m, ok := v.(map[string]any); ok && len(m) == 0 {
			return nil, nil
		}
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	switch o := out.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		if len(o) == 0 {
			return nil, nil
		}
	}
	return out, nil
}

// plain reports whether v is made of decoded JSON values only (maps with
// string keys, slices of any, strings, float64, bools, nil), whose
// encoding is canonical; deeper than a schema ever is, it says no.
func plain(v any, depth int) bool {
	if depth > 64 {
		return false
	}
	switch v := v.(type) {
	case nil, string, float64, bool:
		return true
	case map[string]any:
		for _, e := range v {
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range v {
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// Digest is the SHA-256 of a canonical definition, "sha256:" and hex.
func Digest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// what lists the members in which two canonical definitions of kind k
// differ.
func what(k Kind, old, new json.RawMessage) []string {
	var a, b map[string]json.RawMessage
	_ = json.Unmarshal(old, &a)
	_ = json.Unmarshal(new, &b)
	var out []string
	for _, f := range kindFields[k] {
		if !sameJSON(a[f.key], b[f.key]) {
			out = append(out, f.what)
		}
	}
	if len(out) == 0 {
		// Only what the canonical form keeps can differ; a key cannot
		// (definitions are matched by it). Say something rather than
		// nothing.
		out = []string{kindFields[k][len(kindFields[k])-1].what}
		if k == KindTool || k == KindPrompt {
			out = []string{WhatDescription}
		}
	}
	return out
}

// sameJSON reports whether two canonical JSON values are the same, however
// they were indented since (the pin file is indented for its readers).
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return string(a) == string(b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
