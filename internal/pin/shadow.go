package pin

// Shadowing: a definition that names another server's tool (ScanShadowing).

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
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
