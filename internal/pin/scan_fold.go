package pin

// What the scan reads: text folded to lower case and one space, lookalike
// letters read as the Latin ones they show, invisible characters found
// (Visible shows them).

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

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
	buf  []byte // text as it is written
	// mapped: at is kept (fold); foldInto, which only the rules' search
	// reads, keeps none.
	mapped bool
}

// foldText is fold(s).text, without the map back.
func foldText(s string) string {
	return string(foldInto(make([]byte, 0, len(s)), s))
}

// foldInto appends fold(s).text to dst, without the map back.
func foldInto(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			f := folded{buf: dst}
			f.run(s)
			return f.buf
		}
	}
	return foldASCII(dst, s)
}

// foldASCII appends fold(s).text to dst, s being ASCII.
func foldASCII(dst []byte, s string) []byte {
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
		dst = append(dst, c)
	}
	return dst
}

func fold(s string) folded {
	f := folded{at: make([]int, 0, len(s)), end: len(s), buf: make([]byte, 0, len(s)), mapped: true}
	f.run(s)
	f.text = string(f.buf)
	return f
}

// run folds s into f.buf (and f.at when mapped).
func (f *folded) run(s string) {
	space := false
	for i, r := range s {
		if r < 0x80 {
			// ASCII: no invisible character, no lookalike.
			c := byte(r)
			if c == '*' || c == '`' {
				continue // as foldASCII
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
			if f.mapped {
				f.at = append(f.at, i)
			}
			f.buf = append(f.buf, c)
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
				f.fold(r, i)
			}
			continue
		}
		f.fold(r, i)
	}
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
func (f *folded) fold(r rune, i int) {
	if plainCJK(r) {
		if f.mapped {
			f.at = append(f.at, i, i, i)
		}
		f.buf = utf8.AppendRune(f.buf, r)
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
	if f.mapped {
		for range n {
			f.at = append(f.at, i)
		}
	}
	f.buf = utf8.AppendRune(f.buf, r)
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
