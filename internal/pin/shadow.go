package pin

// Shadowing: a definition that names another server's tool (ScanShadowing).

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// shadowName reports whether a tool name is one shadowing is looked for
// by: one that looks like an identifier (holding _, -, . or an inner
// capital letter), not a common word ("search", "echo") that any text
// may hold.
func shadowName(name string) bool {
	if len(name) < 3 {
		return false
	}
	if strings.ContainsAny(name, "_-.") {
		return true
	}
	for i, r := range name {
		if i > 0 && unicode.IsUpper(r) {
			return true
		}
	}
	return false
}

// Hosted is the names shadowing is looked for by: each tool name of a
// hosted server that looks like an identifier, and each exposed name
// (aggregate mode's PREFIX__TOOL), with the servers that have it.
type Hosted map[string][]string

// Add records that server has a tool of name (and, when exposed is not
// "", that it is offered as exposed).
func (h Hosted) Add(server, name, exposed string) {
	for _, n := range []string{name, exposed} {
		if n == "" || (n == name && !shadowName(n)) {
			continue
		}
		if !slices.Contains(h[n], server) {
			h[n] = append(h[n], server)
		}
	}
}

// ScanShadowing finds, in a canonical definition of server's, each name
// of another hosted server's tool (one server does not have itself), as
// a whole token (letters, digits, _, -, . and / around it break it).
func ScanShadowing(server string, canonical json.RawMessage, hosted Hosted) []Flag {
	if len(hosted) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(canonical, &v) != nil {
		return nil
	}
	var found []Flag
	seen := map[string]bool{}
	var walk func(path string, v any, depth int)
	walk = func(path string, v any, depth int) {
		if depth > 64 || len(found) >= maxFlags {
			return
		}
		switch v := v.(type) {
		case string:
			for _, tok := range tokens(v) {
				owners := hosted[v[tok[0]:tok[1]]]
				if len(owners) == 0 || slices.Contains(owners, server) || seen[v[tok[0]:tok[1]]] {
					continue
				}
				seen[v[tok[0]:tok[1]]] = true
				found = append(found, Flag{Flag: FlagShadowing, Where: orTop(path),
					Text: fmt.Sprintf("names %s's tool %s: %s", strings.Join(owners, ", "), v[tok[0]:tok[1]], around(v, tok[0], tok[1]))})
			}
		case []any:
			for i, e := range v {
				walk(join(path, fmt.Sprint(i)), e, depth+1)
			}
		case map[string]any:
			for _, k := range sortedKeys(v) {
				if path == "" && k == "name" {
					continue // its own name
				}
				walk(join(path, k), v[k], depth+1)
			}
		}
	}
	walk("", v, 0)
	return found
}

// tokens are the byte spans of s's words as tool names are made: runs of
// letters, digits, _, - and . (a trailing . or - is punctuation).
func tokens(s string) [][2]int {
	var out [][2]int
	start := -1
	word := func(r rune) bool {
		return r == '_' || r == '-' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r)
	}
	end := func(i int) {
		if start < 0 {
			return
		}
		j := i
		for j > start && (s[j-1] == '.' || s[j-1] == '-') {
			j--
		}
		if j > start {
			out = append(out, [2]int{start, j})
		}
		start = -1
	}
	for i, r := range s {
		if word(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		end(i)
	}
	end(len(s))
	return out
}

// maxScans bounds the scans kept in memory: past it the cache starts again.
const maxScans = 1 << 14

// flagsOf is what the scan finds in b's definition i of server's (nil for
// a server whose pin_scan is off), once per digest.
func (s *Store) flagsOf(server string, b batch, i int) []Flag {
	if s.cfg.NoScan[server] {
		return nil
	}
	d := b.digests[i]
	if fl, ok := s.scans[d]; ok {
		return fl
	}
	var fl []Flag
	if b.scan != nil {
		fl = b.scan(i)
	} else if c, err := b.canon(i); err == nil {
		fl = Scan(b.kind, c)
	}
	if s.scans == nil || len(s.scans) >= maxScans {
		s.scans = map[string][]Flag{}
	}
	s.scans[d] = fl
	return fl
}

// WriteFlags prints flags for a person, one a line after indent: the kind,
// where, and the offending text made visible.
func WriteFlags(w io.Writer, indent string, flags []Flag) {
	for _, f := range flags {
		fmt.Fprintf(w, "%sflagged %s in %s: %s\n", indent, f.Flag, clip(f.Where), clip(f.Text))
	}
}

// Flagged is what the scan finds in tools, a list server gave a session
// offered caps, by name, with whether a person accepted each flagged
// definition: read only, nothing recorded (Check records; this reads a
// list that may be a part of one, such as what a caller is shown).
func (s *Store) Flagged(server, caps string, tools []*mcp.Tool) (map[string]Flagged, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	b := batch{kind: KindTool, keys: make([]string, len(tools)), digests: make([]string, len(tools)),
		canon: func(i int) ([]byte, error) { return Canonical(tools[i]) },
		scan:  func(i int) []Flag { return ScanTool(tools[i]) }}
	for i, t := range tools {
		b.keys[i] = t.Name
		b.digests[i] = digestOf(s, t)
	}
	var v Verdict
	for i, name := range b.keys {
		fl := s.flagsOf(server, b, i)
		if len(fl) == 0 {
			continue
		}
		reviewed := false
		if s.locked() {
			if ls := s.lockView().Servers[server]; ls != nil {
				reviewed = reviewedIn(ls.Tools[name], b.digests[i])
			}
		} else if set := s.file.Servers[server][caps]; set != nil {
			p := set.Tools[name]
			reviewed = p != nil && p.Digest == b.digests[i] && p.Reviewed
		}
		v.flag(name, fl, reviewed)
	}
	return v.Flags, nil
}

// ScanTool is Scan of a tool's canonical definition, read from the
// decoded tool itself (a hosted list's schemas are decoded JSON already):
// the same flags, without encoding and decoding the definition again.
func ScanTool(t *mcp.Tool) []Flag {
	m := map[string]any{"name": t.Name}
	if t.Title != "" {
		m["title"] = t.Title
	}
	if t.Description != "" {
		m["description"] = t.Description
	}
	if t.Annotations != nil {
		m["annotations"] = annotationsMap(t.Annotations)
	}
	for key, v := range map[string]any{"inputSchema": t.InputSchema, "outputSchema": t.OutputSchema} {
		n, err := normal(v)
		if err != nil {
			c, err := Canonical(t)
			if err != nil {
				return nil
			}
			return Scan(KindTool, c)
		}
		if n != nil {
			m[key] = n
		}
	}
	sc := scanner{}
	sc.walk(m, 0)
	return sc.found
}

// annotationsMap is a tool's annotations as their JSON decodes (a struct:
// normal would encode and decode it, for the title alone).
func annotationsMap(a *mcp.ToolAnnotations) map[string]any {
	m := map[string]any{"idempotentHint": a.IdempotentHint, "readOnlyHint": a.ReadOnlyHint}
	if a.DestructiveHint != nil {
		m["destructiveHint"] = *a.DestructiveHint
	}
	if a.OpenWorldHint != nil {
		m["openWorldHint"] = *a.OpenWorldHint
	}
	if a.Title != "" {
		m["title"] = a.Title
	}
	return m
}

// lookalikes are the letters of other scripts that read as Latin ones in
// most fonts, so that "іgnore all previous instructions" (a Cyrillic і) is
// read as the instruction it looks like: a model reads the shapes, not the
// code points. Only the rules' matching uses the fold; honest text in
// those scripts holds no English instruction to match.
var lookalikes = map[rune]rune{
	// Cyrillic
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'һ': 'h', 'і': 'i', 'ї': 'i', 'ј': 'j', 'к': 'k', 'м': 'm', 'н': 'h',
	'о': 'o', 'р': 'p', 'с': 'c', 'ѕ': 's', 'т': 't', 'у': 'y', 'х': 'x', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w',
	// Greek
	'α': 'a', 'ε': 'e', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x',
	// Latin lookalikes
	'ı': 'i', 'ɡ': 'g', 'ℓ': 'l',
}

// lookalike folds r to the ASCII letter it looks like (fullwidth forms
// included), or returns it as it is.
func lookalike(r rune) rune {
	if r < 0x80 {
		return r
	}
	if r >= 0xFF01 && r <= 0xFF5E { // fullwidth ASCII
		return unicode.ToLower(r - 0xFEE0)
	}
	if l, ok := lookalikes[r]; ok {
		return l
	}
	return r
}
