// Package varref is the registry's ${NAME} syntax, in one place for the
// registry (which expands it), the editor import (which writes it) and env
// files (which give the values): what a NAME may be, and a walk over a
// value's references, where $$ stands for a literal $ and any other $ is
// an error (docs/registry.md, "env and ${NAME}").
//
//	err := varref.Each(s, func(text string) { b.WriteString(text) }, func(name string) error {
//		b.WriteString(lookup(name))
//		return nil
//	})
package varref

import (
	"fmt"
	"strings"
)

// ValidName reports whether name may be referenced as ${NAME}: letters,
// digits and underscores, not starting with a digit (a shell variable's
// name).
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Each walks s in order: text gets each run of literal text ($$ as $), ref
// each reference's name as written (valid or not: ValidName is the
// caller's to ask). It stops at the first error of ref's, or at what the
// syntax refuses: an unterminated ${, or a $ that starts neither ${NAME}
// nor $$ (so that a typo such as $NAME is caught instead of passed on).
func Each(s string, text func(string), ref func(name string) error) error {
	from := 0 // the start of the text not yet handed on
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			continue
		}
		if i > from {
			text(s[from:i])
		}
		switch {
		case i+1 < len(s) && s[i+1] == '$':
			text("$")
			i++
		case i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return fmt.Errorf("unterminated ${ at byte %d (write $$ for a literal $)", i)
			}
			if err := ref(s[i+2 : i+2+end]); err != nil {
				return err
			}
			i += 2 + end
		default:
			return fmt.Errorf("a $ at byte %d must start ${NAME} or be doubled as $$", i)
		}
		from = i + 1
	}
	if from < len(s) {
		text(s[from:])
	}
	return nil
}
