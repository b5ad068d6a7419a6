package remote

import (
	"bytes"
	"io"

	"github.com/colibri-mcp/colibri-mcp/internal/strict"
)

// A remote server's message that two readers could read differently is
// refused before go-sdk reads it (docs/protocol.md, "Strict reading"): the
// message is replaced with bytes go-sdk cannot decode, which fails the
// connection for good (go-sdk's Streamable client fails a connection on an
// event or a body it cannot decode), and the problem is kept for Diagnose,
// which reports kind protocol naming the JSON location. Invalid text in a
// content is repaired instead (U+FFFD), as from a process.

// refusedMessage is what go-sdk is handed in place of a refused message:
// not JSON, so that it fails the connection rather than read a guess.
var refusedMessage = []byte("colibri: refused (read two ways)")

// Unclear is the first message of this server's that was refused as one
// two readers could read differently, or nil.
func (c *Conn) Unclear() *strict.Problem { return c.unclear.Load() }

// screen is msg as go-sdk may read it: msg itself, msg repaired, or
// refusedMessage (the problem kept).
func (c *Conn) screen(msg []byte) []byte {
	fixed, p := strict.Check(msg, strict.FromServer)
	switch {
	case p != nil:
		c.unclear.CompareAndSwap(nil, p)
		return refusedMessage
	case fixed != nil:
		return fixed
	}
	return msg
}

// screenEvent is an event (its lines as read, its blank line included) with
// its data screened: events that are no message (an endpoint, a priming
// event with no data, and, unless every is set, an event of another name
// than "message") pass as they are.
func (c *Conn) screenEvent(ev []byte, every bool) []byte {
	var name string
	var data []byte
	lines := 0
	for _, line := range bytes.SplitAfter(ev, []byte{'\n'}) {
		field, value, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte{':'})
		switch string(field) {
		case "event":
			name = string(bytes.TrimSpace(value))
		case "data":
			value = bytes.TrimPrefix(value, []byte{' '})
			if lines++; lines > 1 {
				data = append(append(data[:len(data):len(data)], '\n'), value...)
			} else {
				data = value
			}
		}
	}
	if len(data) == 0 || (!every && name != "" && name != "message") {
		return ev
	}
	screened := c.screen(data)
	if lines == 1 && &screened[0] == &data[0] && len(screened) == len(data) {
		return ev // the usual case: no copy
	}
	// The event again, its data one line (a JSON message holds no raw
	// newline inside a string; outside one it is white space).
	var out []byte
	for _, line := range bytes.SplitAfter(ev, []byte{'\n'}) {
		if field, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte{':'}); string(field) != "data" && len(bytes.TrimRight(line, "\r\n")) > 0 {
			out = append(out, line...)
		}
	}
	out = append(out, "data: "...)
	out = append(out, bytes.ReplaceAll(bytes.ReplaceAll(screened, []byte{'\r'}, []byte{' '}), []byte{'\n'}, []byte{' '})...)
	return append(out, "\n\n"...)
}

// screenedBody is a JSON response body, read whole (within the bound
// limitBody keeps), screened, then handed on.
type screenedBody struct {
	c    *Conn
	rc   io.ReadCloser
	rest []byte
	read bool
	err  error
}

func (b *screenedBody) Read(p []byte) (int, error) {
	if !b.read {
		b.read = true
		var body []byte
		body, b.err = io.ReadAll(b.rc)
		if b.err == nil {
			b.err = io.EOF
			if len(bytes.TrimSpace(body)) > 0 {
				body = b.c.screen(body)
			}
		}
		b.rest = body
	}
	if len(b.rest) == 0 {
		return 0, b.err
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

func (b *screenedBody) Close() error { return b.rc.Close() }
