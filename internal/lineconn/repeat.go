package lineconn

import (
	"bytes"
	"encoding/json"
	"strings"
)

// maxNoticeLine bounds the lines that repeats looks at: a list_changed
// notification is some 70 bytes.
const maxNoticeLine = 512

// repeats drops a notifications/…/list_changed that repeats, byte for
// byte, the message just before it: with nothing between them, the second
// says nothing the first did not (the list is stale), and go-sdk's decoding
// and dispatch of each costs far more than this comparison. A server that
// sends 100,000 in a row then costs colibri one. It is used by the read
// loop alone.
type repeats struct {
	last []byte // the line of the last message passed on, if a list_changed notification
}

// drop reports whether the line (its parts, as read) repeats the last
// list_changed notification passed on; otherwise it remembers the line if
// it is one.
func (r *repeats) drop(parts [][]byte) bool {
	if len(parts) != 1 || len(parts[0]) > maxNoticeLine {
		r.last = r.last[:0]
		return false
	}
	line := parts[0]
	if len(r.last) > 0 && bytes.Equal(line, r.last) {
		return true
	}
	r.last = r.last[:0]
	if isListChanged(line) {
		r.last = append(r.last, line...)
	}
	return false
}

// isListChanged reports whether line is a notification (no id) whose
// method is notifications/…/list_changed.
func isListChanged(line []byte) bool {
	if !bytes.Contains(line, []byte("list_changed")) {
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal(line, &m) == nil && m.ID == nil &&
		strings.HasPrefix(m.Method, "notifications/") && strings.HasSuffix(m.Method, "/list_changed")
}
