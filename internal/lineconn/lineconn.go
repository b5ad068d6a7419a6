// Package lineconn is an [mcp.Transport] for MCP's stdio framing (one
// JSON-RPC message per line, no embedded newlines) that moves each message
// with as few passes over its bytes as go-sdk's own decoding allows.
//
// go-sdk's [mcp.IOTransport] frames its stream with a JSON decoder (one scan
// and a growing copy of every message), then first tries each message as a
// batch (an array), which costs a depth walk and another scan and copy of the
// whole message before it fails, and only then decodes it. For a message of
// megabytes those passes are most of the time a hop takes. This transport
// finds each line with a byte search, checks it is one JSON value, and
// decodes it once as go-sdk's own [jsonrpc.DecodeMessage] does ([DecodeMessage]); it writes with
// go-sdk's [jsonrpc.EncodeMessage], large params or results spliced in
// rather than copied twice ([Encode]). What the messages mean stays go-sdk's.
//
// A line that is not one JSON-RPC message ends the connection, as it does
// with IOTransport; so does a batch (an array), which MCP has not had since
// 2025-06-18. Blank lines are skipped.
//
//	t := &lineconn.Transport{Reader: stdout, Writer: stdin}
//	cs, err := client.Connect(ctx, t, nil)
package lineconn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkjson "github.com/segmentio/encoding/json"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/strict"
)

// Transport is one connection over Reader (messages in) and Writer
// (messages out). Closing the connection closes both.
type Transport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// Bulk, if set, is lowered into every message written, and the large
	// text of a tools/call's result is lifted into it when the call was
	// written for a request of a caller's (its context carries a
	// bulk.Owner of this table): that request owns the strings (see
	// internal/bulk). Nil: messages pass
	// whole.
	Bulk *bulk.Table
	// Relay, if set, is handed each notification read, in read order,
	// before any later message reaches go-sdk; one it takes (it reports
	// whether it did) never reaches go-sdk at all. params may be kept: it
	// is the reader's own copy. A one-line notification is read without
	// go-sdk's decoder (relayed), so that a flood of them costs colibri
	// what the relay makes of them and little more.
	Relay func(method string, params json.RawMessage) bool
	// Repaired, if set, is told of each message whose content text held
	// invalid UTF-8 or a lone surrogate, replaced with U+FFFD before it
	// was read (internal/strict): for the log.
	Repaired func()

	mu   sync.Mutex
	conn *conn // what Connect made: Call writes through it
}

// Connect implements mcp.Transport. It starts the goroutine that reads.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	c := &conn{
		r:        t.Reader,
		w:        t.Writer,
		bulk:     t.Bulk,
		relay:    t.Relay,
		repaired: t.Repaired,
	}
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	c.frame = StartFrame(t.Reader, t.Writer, 0, c.line, c.direct.end)
	return c, nil
}

type conn struct {
	r io.ReadCloser
	w io.WriteCloser

	frame *Frame // the reading goroutine and whole writes (Frame)

	repaired func()

	closeErr error // Close's, once
	rep      repeats

	relay func(method string, params json.RawMessage) bool

	bulk    *bulk.Table
	pmu     sync.Mutex
	pending map[jsonrpc.ID]*bulk.Owner // tools/calls written for a request that owns strings, not yet answered

	direct directCalls // requests written below go-sdk (Transport.Call)
}

func (c *conn) SessionID() string { return "" }

// ErrBatch is the error for a line that holds a JSON-RPC batch.
var ErrBatch = errors.New("JSON-RPC batches are not supported (MCP 2025-06-18 and later)")

// line is what the hosted side makes of one line (Frame): a message for
// go-sdk, or nothing for a repeat dropped, a notification relayed or the
// answer to a request of colibri's own; an error (a line that is not one
// message) ends the connection.
func (c *conn) line(parts [][]byte, _ int, _ bool) (jsonrpc.Message, error) {
	parts = TrimSpace(parts)
	if len(parts) == 0 {
		return nil, nil
	}
	if c.rep.drop(parts) {
		return nil, nil
	}
	asked, taken := c.relayed(parts)
	if taken {
		return nil, nil
	}
	msg, err := c.decode(parts)
	if err != nil {
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && c.relay != nil && !asked && !req.IsCall() && c.relay(req.Method, req.Params) {
		return nil, nil // relayed: go-sdk never sees it
	}
	if r, ok := msg.(*jsonrpc.Response); ok && c.direct.take(r) {
		return nil, nil // a request of colibri's own below go-sdk (Transport.Call)
	}
	return msg, nil
}

// maxRelayedLine bounds the lines relayed reads itself: a progress or log
// notification is a few hundred bytes; a longer one (one line of pieces)
// is decoded by go-sdk, then relayed all the same.
const maxRelayedLine = 16 << 10

// relayed hands the line to the relay (asked), and reports whether the
// relay took it, when it is one notification (a JSON-RPC 2.0 request without an id)
// read in one piece. It is read with go-sdk's own decoder and flags (field
// names matched exactly) but not through go-sdk's jsonrpc.DecodeMessage,
// which makes and clears a 32 KiB buffer twice for every message: a
// server's flood of 400,000 progress and log notifications cost colibri
// 7 s of CPU in that alone (docs/protocol.md, "Notifications are damped").
// A line that is not exactly such a notification is left to decode, which
// refuses what go-sdk or internal/strict refuses.
func (c *conn) relayed(parts [][]byte) (asked, taken bool) {
	if c.relay == nil || len(parts) != 1 || len(parts[0]) > maxRelayedLine || !bytes.Contains(parts[0], []byte("notifications/")) {
		return false, false
	}
	line := parts[0]
	// What go-sdk would read one way and the caller's parser another is
	// refused as in decode; invalid text is repaired as there.
	fixed, problem := strict.Check(line, strict.FromServer)
	if problem != nil {
		return false, false // decode refuses it
	}
	if fixed != nil {
		line = fixed
	}
	var m struct {
		Version string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	// Parse reads the whole value (its syntax checked as it goes) and
	// returns what follows it, which must be nothing, as in decode.
	// (ZeroCopy: what it returns points into line, which is this read's
	// own copy.)
	rest, err := sdkjson.Parse(line, &m, sdkjson.ZeroCopy|sdkjson.DontMatchCaseInsensitiveStructFields)
	if err != nil || len(bytes.TrimSpace(rest)) > 0 || m.Version != "2.0" || m.ID != nil || m.Method == "" {
		return false, false
	}
	if fixed != nil {
		c.noteRepaired()
	}
	return true, c.relay(m.Method, m.Params)
}

// decode is the message of one line (its parts, as read), which must hold
// exactly one JSON value.
func (c *conn) decode(parts [][]byte) (jsonrpc.Message, error) {
	// The large text of a result a request of colibri's caller awaits
	// (bulk.Owner) is that request's, kept as pieces of the parts; go-sdk decodes text,
	// the same message but for it.
	var text []byte
	var refs []bulk.Ref
	if c.expecting() {
		text, refs = c.bulk.LiftResultParts(parts)
	} else {
		text = Join(parts)
	}
	// go-sdk's decoder stops after the first value: "{…} {…}" would pass as
	// its first half. IOTransport refuses what follows a value on its line.
	// (text is valid exactly when the line is: internal/bulk lifts only
	// valid strings.)
	if !json.Valid(text) {
		c.bulk.Release(refs...)
		return nil, fmt.Errorf("invalid JSON-RPC message: not one JSON value (%d bytes)", Len(parts))
	}
	if text[0] == '[' {
		c.bulk.Release(refs...)
		return nil, ErrBatch
	}
	// What go-sdk would read one way and the caller's parser another is
	// refused before anything reads it (docs/protocol.md, "Strict
	// reading"); invalid text in a result is repaired instead.
	fixed, problem := strict.Check(text, strict.FromServer)
	if problem != nil {
		c.bulk.Release(refs...)
		return nil, problem
	}
	if fixed != nil {
		text = fixed
		c.noteRepaired()
	}
	msg, err := DecodeMessage(text)
	r, ok := msg.(*jsonrpc.Response)
	if ok && err == nil {
		if s := c.answered(r.ID); refs != nil && s != nil && s.Adopt(refs) {
			return msg, nil
		}
	}
	if refs != nil {
		// Not the answer to a call whose request is still held: whole
		// (repaired as above: its text was checked lifted).
		c.bulk.Release(refs...)
		whole := Join(parts)
		if fixed, problem := strict.Check(whole, strict.FromServer); problem != nil {
			return nil, problem
		} else if fixed != nil {
			whole = fixed
		}
		msg, err = DecodeMessage(whole)
	}
	return msg, err
}

func (c *conn) noteRepaired() {
	if c.repaired != nil {
		c.repaired()
	}
}

// expect notes a tools/call written for the request s: its result's large
// strings may be lifted for s.
func (c *conn) expect(id jsonrpc.ID, s *bulk.Owner) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.pending == nil {
		c.pending = map[jsonrpc.ID]*bulk.Owner{}
	}
	if len(c.pending) >= 64 {
		// Calls never answered (the caller gave up, the server never
		// replied) leave their request here: forget the ended ones.
		for id, s := range c.pending {
			if !s.Live() {
				delete(c.pending, id)
			}
		}
	}
	c.pending[id] = s
}

// expecting reports whether some call awaits a result that may be lifted.
func (c *conn) expecting() bool {
	if c.bulk == nil {
		return false
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return len(c.pending) > 0
}

// answered forgets the call id answers, and returns its request (or nil).
func (c *conn) answered(id jsonrpc.ID) *bulk.Owner {
	if c.bulk == nil {
		return nil
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	s := c.pending[id]
	delete(c.pending, id)
	return s
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) { return c.frame.Next(ctx) }

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	if r, ok := msg.(*jsonrpc.Request); ok && c.bulk != nil && r.IsCall() && r.Method == "tools/call" {
		if s := bulk.OwnerFrom(ctx); s != nil && s.Table() == c.bulk {
			c.expect(r.ID, s) // before the server can answer
		}
	}
	data, err := Encode(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	parts, err := c.bulk.Lower(data)
	if err != nil {
		return fmt.Errorf("writing message: %w", err)
	}
	return c.frame.WriteParts(parts)
}

func (c *conn) Close() error {
	c.frame.Close(func() error {
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
		c.direct.end(ErrNotConnected)
		return c.closeErr
	})
	return c.closeErr
}
