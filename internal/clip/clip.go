// Package clip shortens the strings a caller or a hosted server chose
// before colibri quotes them back (a server or tool name in an error, an
// error's whole message), so that an answer stays a few KiB whatever was
// sent: an 8 MB server name once came back five times over.
//
//	msg := fmt.Sprintf("no server named %q", clip.Name(name))
package clip

import (
	"strings"
	"unicode/utf8"
)

// NameBytes bounds a quoted name (the audit log's bound too); MessageBytes
// bounds a whole error message, which may quote several names and a hint.
const (
	NameBytes    = 256
	MessageBytes = 16 << 10
)

// Name is s cut to NameBytes bytes at a character boundary, marked "…".
func Name(s string) string { return To(s, NameBytes) }

// Message is s cut to MessageBytes bytes at a character boundary, marked "…".
func Message(s string) string { return To(s, MessageBytes) }

// To is s cut to at most n bytes at a character boundary, then "…".
func To(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// LastLines is the last n lines of s (a server's stderr tail), at most
// maxBytes of them (cut at a character boundary from the front), without
// the trailing newline.
func LastLines(s string, n, maxBytes int) string {
	s = strings.TrimRight(s, "\r\n")
	i := len(s)
	for range n {
		j := strings.LastIndexByte(s[:i], '\n')
		if j < 0 {
			i = 0
			break
		}
		i = j
	}
	s = strings.TrimLeft(s[i:], "\r\n")
	if len(s) > maxBytes {
		cut := len(s) - maxBytes
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		s = "…" + s[cut:]
	}
	return s
}
