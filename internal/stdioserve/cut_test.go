package stdioserve

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A line is read in pieces of the reader's 64 KiB buffer; where a piece
// ends changes nothing. White space and a byte order mark that the buffer
// cuts (after 64 KiB of padding, or at the end of a message of 64 KiB) are
// trimmed as they are whole.
func TestLineCutByTheBufferIsTrimmedAsWhole(t *testing.T) {
	const piece = 64 << 10
	s := newSession(t, 1<<20, time.Second)
	// sized is a ping with id, of n bytes.
	sized := func(id, n int) string {
		m := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"_meta":{"p":""}}}`, id)
		return strings.Replace(m, `"p":""`, `"p":"`+strings.Repeat("x", n-len(m))+`"`, 1)
	}
	for i, c := range []struct {
		name string
		line func(id int) string
	}{
		{"U+00A0 after the message, cut", func(id int) string { return sized(id, piece-1) + "\u00a0" }},
		{"U+2028 after the message, cut", func(id int) string { return sized(id, piece-2) + "\u2028" }},
		{"U+00A0 before the message, cut", func(id int) string { return strings.Repeat(" ", piece-1) + "\u00a0" + sized(id, 100) }},
		{"a byte order mark, cut", func(id int) string { return strings.Repeat(" ", piece-2) + "\xef\xbb\xbf" + sized(id, 100) }},
		{"a byte order mark, cut, then a space", func(id int) string { return strings.Repeat(" ", piece-1) + "\xef\xbb\xbf " + sized(id, 100) }},
	} {
		id := 700 + i
		s.send(c.line(id))
		if r := s.recv(); r.Error != nil || r.ID != float64(id) {
			t.Errorf("%s: %+v (error %+v), want the ping answered", c.name, r, r.Error)
		}
	}
}
