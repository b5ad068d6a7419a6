package pin

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The poisoning scan (docs/security.md, "A first version can be poisoned
// too"): every definition colibri pins is read for the signs of tool
// poisoning when it is recorded, and what is found is kept beside the pin
// with the scanner's version. A first version is pinned as trusted; the
// scan is what judges what it said.

// ScannerVersion is the version of the rules below. A later scanner may
// find more in a definition pinned under an earlier one; it never
// un-accepts a definition `pins accept` took (Reviewed).
//
// 2: a ZWNJ or ZWJ inside a word of a script that needs it (Persian,
// Hindi) is no longer flagged. Flags recorded by an earlier scanner are
// read again (Flags.current) wherever they are shown or accepted.
//
// 3: letters are read as a model reads them (compatibility forms such as
// mathematical bold, accents, small capitals), default-ignorable
// characters and smuggling variation selectors are invisible, property
// names are read for instructions, markup may carry attributes, and no
// padding inside a match hides it; typographic apostrophes, Armenian
// lookalikes, "do not let the user know", escaped and self-closing markup,
// Markdown's * and ` inside an instruction.
const ScannerVersion = 3

// The kinds of flag (colibri_pin_flags_total's "flag" label).
const (
	// FlagInvisible: a character that does not show or that changes the
	// direction of text — Unicode tags (U+E0000–U+E007F, which can spell
	// a whole hidden instruction), zero-width characters, bidi controls,
	// any other format character (Cf) — anywhere in a definition: a
	// description, a title, a property name, an enum value.
	FlagInvisible = "invisible_character"
	// FlagInstruction: text aimed at the model rather than a description
	// of the tool: to ignore or override earlier instructions, to keep
	// something from the user, to read or send files or secrets the tool
	// has no business with (~/.ssh, credentials, another tool's config).
	FlagInstruction = "model_instruction"
	// FlagMarkup: <IMPORTANT>-style markup, the wrapper poisoned
	// descriptions hide their instructions in.
	FlagMarkup = "instruction_markup"
	// FlagShadowing: a definition that names another hosted server's tool
	// (computed when lists are read, never stored: it depends on the rest
	// of the registry).
	FlagShadowing = "shadowing"
)

// Flag is one sign of poisoning in a definition.
// Its members are declared in key order, as a lock's are.
type Flag struct {
	Flag string `json:"flag"`
	// Text is the offending text with what is around it (bounded), every
	// invisible character made visible as \u{XXXX} (and Unicode tags
	// spelt out as the ASCII they hide).
	Text string `json:"text"`
	// Where is the member it is in, as a path: description,
	// inputSchema/properties/path/description, or a property name's
	// path with "(name)" after it.
	Where string `json:"where"`
}

// Flags are what the scanner of version Scanner found in one definition.
type Flags struct {
	Found   []Flag `json:"found,omitempty"`
	Scanner int    `json:"scanner"`
}

// maxFlags bounds the flags kept for one definition; maxScanned the
// strings and bytes read of one (a definition is bounded by the list it
// came in, but a scan must not cost more than the bound says).
const (
	maxFlags       = 16
	maxScanStrings = 1 << 16
	maxScanBytes   = 1 << 20
	snippet        = 48 // runes of context either side of a match
)

// Scan reads a canonical definition of kind k for the signs of poisoning
// (every kind but shadowing, which ScanShadowing finds). Nothing found is
// an empty list.
func Scan(k Kind, canonical json.RawMessage) []Flag {
	var v any
	if json.Unmarshal(canonical, &v) != nil {
		return nil
	}
	sc := scanner{}
	sc.walk(v, 0)
	return sc.found
}

// ScanText reads one text (a prompts/get message, a server's
// instructions) that where names.
func ScanText(where, text string) []Flag {
	sc := scanner{where: where}
	sc.text(text, false)
	return sc.found
}

type scanner struct {
	found   []Flag
	strings int
	bytes   int
	cut     bool // past the bound: flagged once
	// path is where the walk is (the keys and indexes from the top),
	// made a string only for a flag; where, when set, names the one text
	// ScanText reads.
	path  []string
	where string
	buf   []byte // the text being read, folded (text reuses it)
}

// at is the text being read's place, as a flag names it: the JSON
// Pointer of its path ("(definition)" at the top), " (name)" after a key.
func (sc *scanner) at(key bool) string {
	if sc.where != "" {
		return sc.where
	}
	if len(sc.path) == 0 {
		return "(definition)"
	}
	var b strings.Builder
	for i, p := range sc.path {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(escape(p))
	}
	if key {
		b.WriteString(" (name)")
	}
	return b.String()
}

func (sc *scanner) add(f Flag) {
	if len(sc.found) >= maxFlags {
		return
	}
	for _, g := range sc.found {
		if g.Flag == f.Flag && g.Where == f.Where {
			return // one flag of a kind per member is enough to show
		}
	}
	sc.found = append(sc.found, f)
}

func (sc *scanner) walk(v any, depth int) {
	if depth > 64 {
		return
	}
	switch v := v.(type) {
	case string:
		sc.text(v, false)
	case []any:
		for i, e := range v {
			sc.path = append(sc.path, strconv.Itoa(i))
			sc.walk(e, depth+1)
			sc.path = sc.path[:len(sc.path)-1]
		}
	case map[string]any:
		var small [16]string
		keys := small[:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sc.path = append(sc.path, k)
			sc.text(k, true)
			sc.walk(v[k], depth+1)
			sc.path = sc.path[:len(sc.path)-1]
		}
	}
}

func orTop(p string) string {
	if p == "" {
		return "(definition)"
	}
	return p
}

func join(path, k string) string {
	if strings.ContainsAny(k, "~/") {
		k = escape(k)
	}
	if path == "" {
		return k
	}
	return path + "/" + k
}

// text scans one string; key: it is an object's key (a property name: a
// model reads it as it reads a description, and JSON lets it hold a
// sentence).
func (sc *scanner) text(s string, key bool) {
	sc.strings++
	sc.bytes += len(s)
	over := sc.strings > maxScanStrings || sc.bytes > maxScanBytes
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		if i := invisibleAt(s); i >= 0 {
			sc.add(Flag{Flag: FlagInvisible, Where: sc.at(key), Text: around(s, i, i+utf8.RuneLen(firstRune(s[i:])))})
		}
	}
	if over {
		// Past the bound the rules are not tried (invisible characters
		// still are: that costs one pass): a definition padded past it
		// must not hide its instruction there, so it is flagged, once.
		if !sc.cut {
			sc.cut = true
			sc.add(Flag{Flag: FlagInstruction, Where: sc.at(key), Text: fmt.Sprintf("not read past the scan's bound (%d strings, %d bytes): review it whole", maxScanStrings, maxScanBytes)})
		}
		return
	}
	if len(s) < 8 {
		return
	}
	// Folded without its map back to s, which only a match needs, into
	// the scanner's buffer: most texts hold no rule's triggers (found in
	// one pass over it), and no pattern is tried on them.
	if cap(sc.buf) < len(s) {
		sc.buf = make([]byte, 0, max(len(s), 512))
	}
	sc.buf = foldInto(sc.buf[:0], s)
	found := triggersIn(sc.buf)
	if found == (triggerSet{}) {
		return
	}
	var text string
	for _, rules := range [...]struct {
		flag  string
		rules []rule
	}{{FlagMarkup, markupRules}, {FlagInstruction, instructionRules}} {
		for i := range rules.rules {
			r := &rules.rules[i]
			if !r.armedBy(found) {
				continue
			}
			if text == "" {
				text = string(sc.buf)
			}
			if loc := r.find(text); loc != nil {
				a, b := fold(s).span(loc)
				sc.add(Flag{Flag: rules.flag, Where: sc.at(key), Text: around(s, a, b)})
				break
			}
		}
	}
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

// current is what the scanner of this version finds in def, a definition
// of kind k that f was recorded for: f's own when this scanner recorded
// it, else def scanned again (the rules changed since; a definition
// `pins accept` took stays accepted whatever they say).
func (f *Flags) current(k Kind, def json.RawMessage) []Flag {
	if f == nil {
		return nil
	}
	if f.Scanner >= ScannerVersion {
		return f.Found
	}
	return Scan(k, def)
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
