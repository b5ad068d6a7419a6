// Package termview lays colibri's answers out for a person at a terminal,
// and makes what others wrote harmless there: the servers table, a server's
// tool list, a call's result and progress line, one tool described (its
// arguments as a table, nested ones as rows of their own, bounded), check's
// lines, the auth commands' status, a failure, and a writer that escapes
// control characters; IsTerminal says whether a person is there. The
// command line picks what to show; the words are the hosted servers' and
// the registry's.
//
//	w := termview.Safe(os.Stdout)
//	termview.ServerTools(w, listed.Servers[0]) // "demo: 3 tools", a row a tool
package termview

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// What the command line prints comes in good part from others: hosted tool
// names, descriptions and results, a server's stderr, the registry. None of
// it may reach a terminal as raw control characters: an escape sequence in a
// tool description could retitle the window, rewrite what the screen shows,
// or (on some terminals) answer back into the shell's input.

// Safe wraps w so that every control character but newline and tab is
// written as a visible \u00XX escape (valid inside a JSON string too, so
// --json output stays JSON). Invalid UTF-8 bytes are escaped as well: a
// lone 0x9b is CSI to an 8-bit terminal.
func Safe(w io.Writer) io.Writer { return safeWriter{w} }

type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, SafeText(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// SafeText is s with its control characters escaped (see Safe).
func SafeText(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size) {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r, size):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func unsafeRune(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	}
	return false
}
