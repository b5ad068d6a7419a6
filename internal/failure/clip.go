// Clip and its kin shorten the strings a caller or a hosted server chose
// before colibri quotes them back (a server or tool name in an error, an
// error's whole message), so that an answer stays a few KiB whatever was
// sent: an 8 MB server name once came back five times over.
//
//	msg := fmt.Sprintf("no server named %q", ClipName(name))

package failure

import (
	"strings"
	"unicode/utf8"
)

// ClipNameBytes bounds a quoted name (the audit log's bound too); ClipMessageBytes
// bounds a whole error message, which may quote several names and a hint.
const (
	ClipNameBytes    = 256
	ClipMessageBytes = 16 << 10
)

// ClipName is s cut to ClipNameBytes bytes at a character boundary, marked "…".
func ClipName(s string) string { return Clip(s, ClipNameBytes) }

// ClipMessage is s cut to ClipMessageBytes bytes at a character boundary, marked "…".
func ClipMessage(s string) string { return Clip(s, ClipMessageBytes) }

// Clip is s cut to at most n bytes at a character boundary, then "…".
func Clip(s string, n int) string {
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
