package pin

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/text/unicode/norm"
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
	// Folded without its map back to s, which only a match needs: most
	// texts hold no rule's triggers, and no pattern is tried on them.
	text := foldText(s)
	var groups groupCache
	for _, rules := range [...]struct {
		flag  string
		rules []rule
	}{{FlagMarkup, markupRules}, {FlagInstruction, instructionRules}} {
		for _, r := range rules.rules {
			if !groups.armed(r, text) {
				continue
			}
			if loc := r.find(text); loc != nil {
				a, b := fold(s).span(loc)
				sc.add(Flag{Flag: rules.flag, Where: sc.at(key), Text: around(s, a, b)})
				break
			}
		}
	}
}

// groupCache remembers, for one text, which trigger groups it holds: the
// rules share some ("user", "human").
type groupCache struct {
	n    int
	keys [8]*string
	vals [8]bool
}

func (c *groupCache) armed(r rule, text string) bool {
	for _, g := range r.triggers {
		if !c.holds(g, text) {
			return false
		}
	}
	return true
}

func (c *groupCache) holds(g []string, text string) bool {
	k := &g[0]
	for i := range c.n {
		if c.keys[i] == k {
			return c.vals[i]
		}
	}
	v := slices.ContainsFunc(g, func(t string) bool { return strings.Contains(text, t) })
	if c.n < len(c.keys) {
		c.keys[c.n], c.vals[c.n] = k, v
		c.n++
	}
	return v
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// invisible reports whether r does not show, or changes the direction of
// the text around it.
func invisible(r rune) bool {
	switch {
	case r < 0x80, plainCJK(r):
		return false
	case r >= 0xE0000 && r <= 0xE007F: // tags
		return true
	case r == 0x200B, r == 0x200C, r == 0x200D, r == 0x2060, r == 0xFEFF, r == 0x180E: // zero-width
		return true
	case r == 0x200E, r == 0x200F, r == 0x061C, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069: // bidi
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// invisibleAt is the byte offset of s's first invisible character, -1
// when none.
func invisibleAt(s string) int {
	prev := rune(0) // the last rune that is not a variation selector or skin tone
	for i, r := range s {
		if r == 0x200D && pictographic(prev) && pictographic(firstRune(s[i+3:])) {
			continue // a zero-width joiner inside an emoji (👨‍👩‍👧) shows as that emoji
		}
		if (r == 0x200C || r == 0x200D) && joined(prev, firstRune(s[i+3:])) {
			continue // a joiner or non-joiner inside a word of a script that needs it (Persian می‌خواهم)
		}
		if selector(r) && selects(prev, r, s[:i]) {
			continue // one variation selector after the character it picks a form of (❤️, 葛󠄀)
		}
		if invisible(r) {
			return i
		}
		if r != 0xFE0F && (r < 0x1F3FB || r > 0x1F3FF) {
			prev = r
		}
	}
	return -1
}

// selector reports whether r is a variation selector (Unicode's
// Variation_Selector, without its table's search).
func selector(r rune) bool {
	return r >= 0x180B && r <= 0x180F && r != 0x180E || r >= 0xFE00 && r <= 0xFE0F || r >= 0xE0100 && r <= 0xE01EF
}

// plainCJK reports whether r is a Han ideograph, a Hangul syllable or a
// kana letter: none is invisible, a mark or a lookalike, so the scan
// reads CJK text without searching Unicode's tables for each.
func plainCJK(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0xAC00 && r <= 0xD7A3 || r >= 0x3041 && r <= 0x3096 || r >= 0x30A1 && r <= 0x30FA
}

// selects reports whether variation selector r, after before (whose last
// rune that is not a selector or skin tone is prev), picks a form of a
// character that has them: one selector, right after a character other
// than an ASCII letter or a space (U+FE0E/U+FE0F after a symbol or a
// keycap's digit, U+FE00–U+FE0D after a symbol or a CJK compatibility
// ideograph), an ideographic one (U+E0100–U+E01EF) after a Han ideograph,
// a Mongolian one after a Mongolian letter. A run of them, or one after
// a Latin letter, is how bytes are smuggled in "invisible" text.
func selects(prev, r rune, before string) bool {
	last, _ := utf8.DecodeLastRuneInString(before)
	if last != prev || prev == 0 || unicode.IsSpace(prev) {
		return false // after another selector, a skin tone, or nothing
	}
	switch {
	case r >= 0xE0100:
		return unicode.Is(unicode.Han, prev)
	case r >= 0x180B && r <= 0x180F:
		return unicode.Is(unicode.Mongolian, prev)
	case r == 0xFE0E || r == 0xFE0F:
		return prev >= 0x80 || prev >= '0' && prev <= '9' || prev == '#' || prev == '*'
	}
	return prev >= 0x80 && !unicode.IsLetter(prev) || unicode.Is(unicode.Han, prev)
}

// joinerScripts are the scripts whose words need U+200C ZERO WIDTH
// NON-JOINER or U+200D ZERO WIDTH JOINER to be spelled right: Arabic
// (Persian, Urdu, Kurdish, Pashto), Syriac, N'Ko, Mongolian, and the
// Brahmic scripts of India and Sri Lanka (a conjunct's form after a
// virama).
var joinerScripts = []*unicode.RangeTable{unicode.Arabic, unicode.Syriac, unicode.Nko, unicode.Mongolian,
	unicode.Devanagari, unicode.Bengali, unicode.Gurmukhi, unicode.Gujarati, unicode.Oriya, unicode.Tamil,
	unicode.Telugu, unicode.Kannada, unicode.Malayalam, unicode.Sinhala}

// joined reports whether a ZWNJ or ZWJ between a and b is part of a word:
// both are letters or marks of one script that uses them. Anywhere else
// (between Latin letters, beside a space or another joiner) it hides.
func joined(a, b rune) bool {
	if !(unicode.IsLetter(a) || unicode.IsMark(a)) || !(unicode.IsLetter(b) || unicode.IsMark(b)) {
		return false
	}
	for _, t := range joinerScripts {
		if unicode.Is(t, a) {
			return unicode.Is(t, b)
		}
	}
	return false
}

// pictographic reports whether r is an emoji an emoji ZWJ sequence joins
// (the blocks of Unicode's Extended_Pictographic).
func pictographic(r rune) bool {
	return (r >= 0x1F000 && r <= 0x1FAFF) || (r >= 0x2300 && r <= 0x23FF) || (r >= 0x2600 && r <= 0x27BF) || (r >= 0x2B00 && r <= 0x2BFF)
}

// folded is a text as the rules read it: lower case, invisible characters
// and Markdown's * and ` removed (an instruction split by zero-width spaces is still one), runs
// of space made one; offsets map back to the original.
type folded struct {
	text string
	at   []int // at[i]: the offset in the original of text's byte i
	end  int
}

// foldText is fold(s).text, without the map back.
func foldText(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		return fold(s).text
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '*' || c == '`' {
			continue // Markdown's emphasis and code marks: "**ignore** all `previous` instructions"
		}
		if c == ' ' || c >= '\t' && c <= '\r' {
			if space {
				continue
			}
			space, c = true, ' '
		} else {
			space = false
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

func fold(s string) folded {
	var b strings.Builder
	b.Grow(len(s))
	f := folded{at: make([]int, 0, len(s)), end: len(s)}
	space := false
	for i, r := range s {
		if r < 0x80 {
			// ASCII: no invisible character, no lookalike.
			c := byte(r)
			if c == '*' || c == '`' {
				continue // as foldText
			}
			if c == ' ' || c >= '\t' && c <= '\r' {
				if space {
					continue
				}
				space, c = true, ' '
			} else {
				space = false
				if c >= 'A' && c <= 'Z' {
					c += 'a' - 'A'
				}
			}
			f.at = append(f.at, i)
			b.WriteByte(c)
			continue
		}
		if invisible(r) {
			continue
		}
		if unicode.IsSpace(r) {
			if space {
				continue
			}
			space = true
			r = ' '
		} else {
			space = false
		}
		// Compatibility forms (𝐢𝐠𝐧𝐨𝐫𝐞, ⓘ, ﬁ) read as the letters they
		// decompose to, and a letter read without its accents (ígnore,
		// i\u0301gnore): a model reads "ignore" in each.
		if d := latinDecomposition(r); d != nil {
			for _, r := range string(d) {
				f.fold(&b, r, i)
			}
			continue
		}
		f.fold(&b, r, i)
	}
	f.text = b.String()
	return f
}

// latinDecomposition is r's compatibility decomposition (NFKD) where it
// may hold a Latin letter — accented letters, ligatures, superscripts,
// letterlike and enclosed forms, mathematical alphanumerics — else nil:
// the blocks of other scripts (CJK, Hangul, Indic) are not looked up, so
// honest text in them costs what it did.
func latinDecomposition(r rune) []byte {
	switch {
	case r >= 0x80 && r <= 0x2FF, r >= 0x1D00 && r <= 0x1EFF, r >= 0x2070 && r <= 0x24FF,
		r >= 0xFB00 && r <= 0xFB06, r >= 0x1D400 && r <= 0x1D7FF, r >= 0x1F100 && r <= 0x1F1FF:
	default:
		return nil
	}
	var buf [utf8.UTFMax]byte
	return norm.NFKD.Properties(buf[:utf8.EncodeRune(buf[:], r)]).Decomposition()
}

// fold writes r (not ASCII space, not invisible), at i in the original,
// as the rules read it: marks dropped, lower case, lookalikes folded.
func (f *folded) fold(b *strings.Builder, r rune, i int) {
	if plainCJK(r) {
		f.at = append(f.at, i, i, i)
		b.WriteRune(r)
		return
	}
	if unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || invisible(r) {
		return
	}
	r = lookalike(unicode.ToLower(r))
	n := utf8.RuneLen(r)
	if n < 0 {
		n = 1
	}
	for range n {
		f.at = append(f.at, i)
	}
	b.WriteRune(r)
}

// span maps a match in f.text back to the original's offsets.
func (f folded) span(loc []int) (int, int) {
	a := f.at[loc[0]]
	b := f.end
	if loc[1] < len(f.at) {
		b = f.at[loc[1]]
	}
	return a, b
}

// around is s[a:b] with up to snippet runes either side, bounded, made
// visible.
func around(s string, a, b int) string {
	start, end := a, b
	for n := 0; n < snippet && start > 0; n++ {
		_, size := utf8.DecodeLastRuneInString(s[:start])
		start -= size
	}
	for n := 0; n < snippet && end < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	if b-a > 4*snippet {
		b = a + 4*snippet
		for b < len(s) && !utf8.RuneStart(s[b]) {
			b++
		}
		end = b
	}
	out := Visible(s[start:end])
	if start > 0 {
		out = "…" + out
	}
	if end < len(s) {
		out += "…"
	}
	return out
}

// Visible is s with every invisible character and control character
// written as \u{XXXX}, and a run of Unicode tags followed by the ASCII it
// spells (tags are how a hidden instruction is smuggled: U+E0041 is a
// hidden "A").
func Visible(s string) string {
	var b, tags strings.Builder
	flush := func() {
		if tags.Len() > 0 {
			fmt.Fprintf(&b, "[tags spell %q]", tags.String())
			tags.Reset()
		}
	}
	for _, r := range s {
		switch {
		case r >= 0xE0020 && r <= 0xE007E:
			fmt.Fprintf(&b, `\u{%X}`, r)
			tags.WriteRune(r - 0xE0000)
		case invisible(r), unicode.IsControl(r) && r != '\n' && r != '\t':
			flush()
			fmt.Fprintf(&b, `\u{%X}`, r)
		default:
			flush()
			b.WriteRune(r)
		}
	}
	flush()
	return b.String()
}

// The rules, read on folded text (lower case, one space). Each is narrow
// on purpose: a tool that says what it does to files ("Read the complete
// contents of a file", "Delete the file at path") is not flagged; text
// that tells the model what to do beyond the tool, or to keep it from the
// user, or names secrets the tool has no business with, is. Their test
// vectors are in docs/security.md and scan_test.go.
var (
	markupRules = []rule{
		{[][]string{{"<", "&lt;"}, {"important", "system", "instruction", "admin", "critical", "secret", "hidden", "override", "assistant", "sudo"}},
			l("<", "&lt;"),
			regexp.MustCompile(`(<|&lt;)/?\s*(important|system|instructions?|admin|critical|secret|hidden|override|assistant|sudo)(\s+[a-z_-]+\s*=[^<>]{0,80})?\s*/?(>|&gt;)`), nil},
		{[][]string{{"[inst]", "[/inst]", "<|"}}, l("[", "<|"),
			regexp.MustCompile(`\[/?inst\]|<\|im_start\|>|<\|system\|>`), nil},
	}
	instructionRules = []rule{
		// Override the model's instructions.
		{[][]string{{"ignore", "disregard", "forget", "override", "bypass"}, {"instruction", "prompt", "rules", "direction", "directive", "guideline", "message"}},
			w("ignore", "disregard", "forget", "override", "bypass"),
			regexp.MustCompile(`\b(ignore|disregard|forget|override|bypass) (all |any |every |the )?(of )?(your |the )?(previous|prior|earlier|above|preceding|other|original|system|existing) (\w+ )?(instructions?|prompts?|rules|directions|directives|guidelines|messages)\b`), nil},
		{[][]string{{"instructions:", "instruction:"}}, w("new", "updated", "real", "actual"),
			regexp.MustCompile(`\b(new|updated|real|actual) (system )?instructions?:`), nil},
		// Keep it from the user.
		{[][]string{userGroup, {"tell", "inform", "mention", "notify", "reveal", "alert", "show"}, {"not ", "never", "without", "n't", "dont"}},
			w("do not", "don't", "dont", "never", "without"),
			regexp.MustCompile(`\b(do not|don't|dont|never|without) (\w+ ){0,3}(tell|telling|inform|informing|mention|mentioning|notify|notifying|reveal|revealing|alert|alerting|show|showing)( it| this| that| anything)? (to )?the (user|human)\b`), nil},
		{[][]string{userGroup, {"let"}, {"know", "see", "notice"}},
			w("do not", "don't", "dont", "never"),
			regexp.MustCompile(`\b(do not|don't|dont|never) let the (user|human) (know|see|notice)\b`), nil},
		{[][]string{userGroup, {"hide", "conceal", "keep"}, {"from"}},
			w("hide", "conceal", "keep"),
			regexp.MustCompile(`\b(hide|conceal|keep) (\w+ ){0,4}(from|secret from) the (user|human)\b`), nil},
		{[][]string{userGroup, {" not "}, {"know", "see", "notice", "told"}},
			w("the user", "the human"),
			regexp.MustCompile(`\bthe (user|human) (must|should|need) not (know|see|notice|be told)\b`), nil},
		{[][]string{userGroup, {"without", "before"}, {"knowing", "noticing", "knowledge", "consent", "approval"}},
			w("without", "before"),
			regexp.MustCompile(`\b(without|before) (the )?(user|human)('s)? (knowing|noticing|knowledge|consent|approval)\b`), nil},
		// Files and secrets no tool description has business naming.
		{[][]string{{".ssh", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".aws/credentials", "/etc/shadow", ".netrc", ".pgpass", ".docker/config", ".kube/config", ".git-credentials"}},
			append(l("~/.ssh", "/.ssh/", ".aws/credentials", "/etc/shadow", ".netrc", ".pgpass", ".docker/config.json", ".kube/config", ".git-credentials"), w("id_")...),
			regexp.MustCompile(`~/\.ssh\b|\bid_(rsa|dsa|ecdsa|ed25519)\b|/\.ssh/|\.aws/credentials|/etc/shadow\b|\.netrc\b|\.pgpass\b|\.docker/config\.json|\.kube/config\b|\.git-credentials\b`), nil},
		{[][]string{{"/.cursor/", "/.claude/", "/.codeium/", "/.vscode/", "mcp.json", "claude_desktop_config"}},
			append(l("~/.", "$home/.", "%userprofile%/.", "claude_desktop_config.json"), w("mcp.json")...),
			regexp.MustCompile(`(~|\$home|%userprofile%)/\.(cursor|claude|codeium|vscode)/|\bmcp\.json\b|claude_desktop_config\.json`), nil},
		{[][]string{{"read", "send", "pass", "include", "upload", "post", "forward", "exfiltrate", "leak", "append", "attach", "copy"},
			{"private key", "ssh key", "api keys", "passwords", "secrets", "credentials", "session cookies", "environment variables", "env vars", ".env file"}},
			w("read", "send", "pass", "include", "upload", "post", "forward", "exfiltrate", "leak", "append", "attach", "copy"),
			regexp.MustCompile(`\b(read|send|pass|include|upload|post|forward|exfiltrate|leak|append|attach|copy) (\w+ ){0,5}(the )?(user's |users' |their |all )?(private keys?|ssh keys?|api keys|passwords|secrets|credentials|session cookies|environment variables|env vars|\.env file)\b`), nil},
	}
)

// userGroup is the trigger group of every rule about the user, one slice
// so that a text is searched for it once (groupCache).
var userGroup = []string{"user", "human"}

// rule is one pattern, tried only on a text that holds, for each group of
// its triggers, one of the group (plain substring searches: most
// descriptions hold none, and a regular expression costs far more than a
// search).
type rule struct {
	triggers [][]string
	// starts are the literals every match begins with (word: at a word's
	// start): the pattern is tried only where one is, anchored there
	// (at), on the rest of the text: an anchored match ends where the
	// pattern can no longer match (a few words on), so the rest costs
	// what the match reads, and no padding (a word of 2 KiB) hides one.
	starts []start
	re     *regexp.Regexp
	at     *regexp.Regexp // re anchored at its start
}

type start struct {
	lit  string
	word bool
}

func l(lits ...string) []start {
	out := make([]start, len(lits))
	for i, t := range lits {
		out[i] = start{lit: t}
	}
	return out
}

func w(lits ...string) []start {
	out := l(lits...)
	for i := range out {
		out[i].word = true
	}
	return out
}

func init() {
	for _, rules := range [][]rule{markupRules, instructionRules} {
		for i := range rules {
			rules[i].at = regexp.MustCompile(`^(?:` + rules[i].re.String() + `)`)
		}
	}
}

func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// armed reports whether lower (a text in lower case) holds one trigger of
// each of r's groups.
func (r rule) armed(lower string) bool {
	for _, group := range r.triggers {
		if !slices.ContainsFunc(group, func(t string) bool { return strings.Contains(lower, t) }) {
			return false
		}
	}
	return true
}

// find is the leftmost match of r in s (folded text, armed for r), or
// nil: the pattern tried anchored at each place one of its starts is, in
// order.
func (r rule) find(s string) []int {
	for from := 0; from < len(s); {
		pos := -1
		for _, st := range r.starts {
			for off := from; off < len(s); {
				i := strings.Index(s[off:], st.lit)
				if i < 0 {
					break
				}
				i += off
				if st.word && i > 0 && wordByte(s[i-1]) {
					off = i + 1
					continue
				}
				if pos < 0 || i < pos {
					pos = i
				}
				break
			}
		}
		if pos < 0 {
			return nil
		}
		if loc := r.at.FindStringIndex(s[pos:]); loc != nil {
			return []int{pos + loc[0], pos + loc[1]}
		}
		from = pos + 1
	}
	return nil
}

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
				// A name in lookalike letters (send_emaіl, a Cyrillic і)
				// reads as the name: the model calls that tool.
				name := nameFold(v[tok[0]:tok[1]])
				owners := hosted[name]
				if len(owners) == 0 || slices.Contains(owners, server) || seen[name] {
					continue
				}
				seen[name] = true
				found = append(found, Flag{Flag: FlagShadowing, Where: orTop(path),
					Text: fmt.Sprintf("names %s's tool %s: %s", strings.Join(owners, ", "), name, around(v, tok[0], tok[1]))})
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

// nameFold is a token as a model reads it, for shadowing: compatibility
// forms decomposed, marks dropped, lookalike letters read as the ASCII ones
// (a tool name is ASCII: SEP-986).
func nameFold(tok string) string {
	ascii := true
	for i := 0; i < len(tok); i++ {
		if tok[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return tok
	}
	var b strings.Builder
	put := func(r rune) {
		if !unicode.Is(unicode.Mn, r) && !invisible(r) {
			b.WriteRune(lookalike(r))
		}
	}
	for _, r := range tok {
		if d := latinDecomposition(r); d != nil {
			for _, r := range string(d) {
				put(r)
			}
			continue
		}
		put(r)
	}
	return b.String()
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
	'ı': 'i', 'ɡ': 'g', 'ℓ': 'l', 'ɑ': 'a', 'ɩ': 'i', 'ǀ': 'l',
	// Armenian, and Cyrillic beyond Russian's
	'օ': 'o', 'ս': 'u', 'հ': 'h', 'ո': 'n', 'ӏ': 'l', 'ꙇ': 'i',
	// Typographic apostrophes read as the ASCII one ("don’t")
	'\u2019': '\'', '\u2018': '\'', '\u02BC': '\'',
	// Small capitals
	'ᴀ': 'a', 'ʙ': 'b', 'ᴄ': 'c', 'ᴅ': 'd', 'ᴇ': 'e', 'ꜰ': 'f', 'ɢ': 'g', 'ʜ': 'h', 'ɪ': 'i', 'ᴊ': 'j', 'ᴋ': 'k',
	'ʟ': 'l', 'ᴍ': 'm', 'ɴ': 'n', 'ᴏ': 'o', 'ᴘ': 'p', 'ʀ': 'r', 'ꜱ': 's', 'ᴛ': 't', 'ᴜ': 'u', 'ᴠ': 'v', 'ᴡ': 'w',
	'ʏ': 'y', 'ᴢ': 'z',
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
