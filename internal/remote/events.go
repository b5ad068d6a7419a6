package remote

import (
	"bytes"
	"encoding/json"
	"io"
)

// A Relay takes a notification of the server's off an event stream as it is
// read, before anything the server sent after it reaches the MCP session,
// and reports whether it took it (then the session never sees it). method
// and params are the notification's.
type Relay func(method string, params json.RawMessage) bool

// SetRelay makes f the Relay of every event stream read from now on (the
// answers to POSTs, the standalone GET stream, an SSE transport's stream).
// It replaces the wrapper a session would otherwise need around go-sdk's
// connection, which would hide the connection's hooks from the session.
func (c *Conn) SetRelay(f Relay) { c.relay.Store(&f) }

func (c *Conn) relayFunc() Relay {
	if f := c.relay.Load(); f != nil {
		return *f
	}
	return nil
}

// eventBody is an event stream (text/event-stream), read event by event:
// each event is bounded (Options.MaxBytes: the moment one passes it,
// reading fails with ErrTooLarge and the body is closed), held until its
// blank line, then handed on whole, or, when it is a notification the
// relay takes, as its id and retry alone (keepIDs) or not at all.
type eventBody struct {
	c     *Conn
	rc    io.ReadCloser
	relay Relay
	// tooLarge is called when an event passes the bound (instead of
	// marking the Conn's last answer too large).
	tooLarge func()
	// keepIDs: a relayed event still hands on its id and retry (Streamable
	// HTTP, which resumes by them); else nothing of it (the SSE transport
	// takes every event for a message).
	keepIDs bool
	// everyEvent: every event's data is a message, whatever the event's
	// name (go-sdk's SSE transport client reads them all so), not only
	// those named "message" or nothing (its Streamable client's).
	everyEvent bool

	buf   [32 << 10]byte
	event []byte // the current event's lines so far, as read
	n     int64  // bytes of the current event, as limitBody counts them
	text  bool   // the current line has more than "\r" so far
	out   []byte // whole events, to hand out
	err   error  // what reading rc ended with, once out is handed out
}

func (b *eventBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		n, err := b.rc.Read(b.buf[:])
		b.c.read.Add(int64(n))
		if err := b.take(b.buf[:n]); err != nil {
			b.err = err
			return 0, err
		}
		if err != nil {
			// What is left is an event the server never ended: the SDK
			// reads it as one (its scanner does at EOF), so it is screened
			// and relayed as one.
			if len(b.event) > 0 {
				b.done()
			}
			b.err = err
		}
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	if len(b.out) == 0 {
		b.out = nil // let a big event's memory go
	}
	return n, nil
}

// take adds chunk to the current event, handing on each event it ends.
func (b *eventBody) take(chunk []byte) error {
	max := b.c.opts.MaxBytes
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		seg := chunk
		if i >= 0 {
			seg = chunk[:i]
		}
		if len(bytes.Trim(seg, "\r")) > 0 {
			b.text = true
		}
		b.n += int64(len(seg))
		if i < 0 {
			b.event = append(b.event, seg...)
		} else {
			b.event = append(b.event, chunk[:i+1]...)
			if b.text {
				b.n++
			} else {
				b.n = 0 // a blank line: the event ended
				b.done()
			}
			b.text = false
			chunk = chunk[i+1:]
		}
		if max > 0 && b.n > max {
			b.event = nil
			if b.tooLarge != nil {
				b.tooLarge()
			} else {
				b.c.tooLarge.Store(true)
			}
			b.rc.Close()
			return ErrTooLarge
		}
		if i < 0 {
			break
		}
	}
	return nil
}

// done hands on the event just ended (b.event, its blank line included).
func (b *eventBody) done() {
	ev := b.c.screenEvent(b.event, b.everyEvent) // strict.go
	b.event = nil
	if b.relay != nil {
		if kept, taken := b.relayed(ev); taken {
			ev = kept
		}
	}
	if len(b.out) == 0 {
		b.out = ev // no copy for the usual one event at a time
		return
	}
	b.out = append(b.out, ev...)
}

// relayed reads ev (one event, as the SDK's scanner does: "field: value"
// lines, data lines joined by "\n") and, when it is a notification the relay
// takes, returns what is left of it: its id and retry lines (keepIDs), or
// nothing.
func (b *eventBody) relayed(ev []byte) (kept []byte, taken bool) {
	// Only a notification can be relayed, and each names its method:
	// most events (results, often large) are not read twice.
	if !bytes.Contains(ev, []byte("notifications")) {
		return nil, false
	}
	var name string
	var data, rest []byte
	for _, line := range bytes.SplitAfter(ev, []byte{'\n'}) {
		field, value, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte{':'})
		switch string(field) {
		case "event":
			name = string(bytes.TrimSpace(value))
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimSpace(value)...)
		case "id", "retry":
			if b.keepIDs {
				rest = append(rest, line...)
			}
		}
	}
	if name != "" && name != "message" {
		return nil, false
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &msg) != nil || msg.ID != nil || msg.Method == "" || !b.relay(msg.Method, msg.Params) {
		return nil, false
	}
	if rest != nil {
		rest = append(rest, '\n') // the event's id or retry, still an event
	}
	return rest, true
}

func (b *eventBody) Close() error { return b.rc.Close() }
