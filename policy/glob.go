package policy

import (
	"path"
	"unicode/utf8"
)

// Match reports whether a hosted tool's name matches a glob of the policy.
// The syntax is path.Match's (`*`, `?`, `[a-z]`, `[^a-z]`, `\` escapes), and
// a pattern path.Match refuses is refused here with the same error. But a
// tool's name is not a path: `*` and `?` match a `/` too. MCP tool names
// may hold slashes ("admin/delete_user", SEP-986), and a deny pattern
// "*delete*" that let such a name through would be a hole that looks
// closed; so would "*", meant to deny everything. Case is ignored.
func Match(pattern, name string) (bool, error) {
	if _, err := path.Match(pattern, ""); err != nil { // checks the whole pattern
		return false, err
	}
	// Without regard to case (docs/operations.md#policy): a hosted server
	// chooses its names, and "*delete*" must deny "Delete_user" and
	// "DELETE" too.
	return glob(FoldASCII(pattern), FoldASCII(name)), nil
}

// FoldASCII is s with ASCII capitals made small, and nothing else changed
// (a valid tool name is ASCII: SEP-986).
func FoldASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// glob matches name against a pattern path.Match accepts. It is the
// classic wildcard walk: on a mismatch, go back to the last `*` and let it
// take one byte more (as path.Match does: it tries a star's chunk at every
// byte offset).
func glob(pattern, name string) bool {
	px, nx := 0, 0
	starPx, starNx := -1, 0
	for px < len(pattern) || nx < len(name) {
		if px < len(pattern) {
			switch pattern[px] {
			case '*':
				starPx, starNx = px, nx
				px++
				continue
			case '?':
				if nx < len(name) {
					_, w := utf8.DecodeRuneInString(name[nx:])
					px, nx = px+1, nx+w
					continue
				}
			case '[':
				if nx < len(name) {
					r, w := utf8.DecodeRuneInString(name[nx:])
					if end, ok := matchClass(pattern[px:], r); ok {
						px, nx = px+end, nx+w
						continue
					}
				}
			default:
				lit := px
				if pattern[px] == '\\' {
					lit++
				}
				_, w := utf8.DecodeRuneInString(pattern[lit:])
				if nx+w <= len(name) && name[nx:nx+w] == pattern[lit:lit+w] {
					px, nx = lit+w, nx+w
					continue
				}
			}
		}
		if starPx >= 0 && starNx < len(name) {
			starNx++
			px, nx = starPx+1, starNx
			continue
		}
		return false
	}
	return true
}

// matchClass matches r against the character class that class begins with
// ("[…]", valid as path.Match reads it), and returns the class's length.
func matchClass(class string, r rune) (end int, ok bool) {
	i := 1
	negated := i < len(class) && class[i] == '^'
	if negated {
		i++
	}
	matched := false
	for n := 0; ; n++ {
		if class[i] == ']' && n > 0 {
			i++
			break
		}
		var lo, hi rune
		lo, i = classChar(class, i)
		hi = lo
		if class[i] == '-' {
			hi, i = classChar(class, i+1)
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
	return i, matched != negated
}

// classChar is the character at class[i] in a class, `\` escapes read, and
// the index after it.
func classChar(class string, i int) (rune, int) {
	if class[i] == '\\' {
		i++
	}
	r, w := utf8.DecodeRuneInString(class[i:])
	return r, i + w
}
