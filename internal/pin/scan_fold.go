package pin

// What the scan reads: text folded to lower case and one space, lookalike letters read as the Latin ones they show, invisible characters found (Visible shows them).

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// invisible reports whether r does not show, or changes the direction of
// the text around it.
func invisible(r rune) bool {
	switch {
	case r < 0x80:
		return false
	case r >= 0xE0000 && r <= 0xE007F: // tags
		return true
	case r == 0x200B, r == 0x200C, r == 0x200D, r == 0x2060, r == 0xFEFF, r == 0x180E: // zero-width
		return true
	case r == 0x200E, r == 0x200F, r == 0x061C, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069: // bidi
		return true
	}
	return unicode.Is(unicode.Cf, r)
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
		if invisible(r) {
			return i
		}
		if r != 0xFE0F && (r < 0x1F3FB || r > 0x1F3FF) {
			prev = r
		}
	}
	return -1
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
// removed (an instruction split by zero-width spaces is still one), runs
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
	f.text = b.String()
	return f
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
