// Package stdioserve is colibri's stdio face: newline-delimited JSON-RPC on
// a pair of streams, as an [mcp.Transport] for go-sdk's server, that survives
// a careless or hostile caller.
//
// go-sdk's own [mcp.IOTransport] ends the session on the first line it cannot
// decode (not JSON, nested too deep, a wrong "jsonrpc", an object as id, a
// line over its limit): the JSON decoder that frames its stream cannot resume
// after an error, and any error from Connection.Read ends a jsonrpc2
// connection. This transport frames lines itself, reads each as go-sdk's
// own [jsonrpc.DecodeMessage] reads it ([lineconn.DecodeMessage]), and
// answers a line that does not decode with a JSON-RPC error (-32700 parse
// error, -32600 invalid request; with the line's id when it can be read,
// else null), then reads on.
//
// It also keeps the books of the session's requests, which go-sdk would
// otherwise get wrong without a word: a request that reuses the id of one in
// flight is answered -32600 (go-sdk would drop it silently); a request the
// caller cancelled gets no answer, as MCP asks; a response to no request
// colibri made is dropped with a warning; and when the input ends, calls in
// flight are answered (bounded by DrainTimeout) before Read reports the end.
//
//	t := &stdioserve.Transport{Reader: os.Stdin, Writer: os.Stdout, MaxMessageBytes: 17 << 20, DrainTimeout: 10 * time.Second}
//	err := server.Run(ctx, t)
package stdioserve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/lineconn"
	"github.com/colibri-mcp/colibri-mcp/internal/strict"
)

// Transport serves one MCP session over Reader and Writer.
type Transport struct {
	Reader io.Reader
	Writer io.Writer
	// MaxMessageBytes bounds one line (one message, without its "\n" or
	// "\r\n"); a longer line is skipped, never held whole, and answered with
	// -32600. Zero means mcp.DefaultMaxLineLength.
	MaxMessageBytes int
	// DrainTimeout bounds how long, once the input has ended, calls in
	// flight may take to be answered. Zero: the end is reported at once.
	DrainTimeout time.Duration
	// Logger receives a warning for each line answered with an error or
	// dropped (its size and the reason, never its content). Nil discards.
	Logger *slog.Logger
	// Bulk, if set, is where the large strings of a tools/call's arguments
	// wait while go-sdk handles the call (see internal/bulk): they are held
	// under the call's id until its answer is written, and every message
	// written is lowered through it. Nil: messages pass whole.
	Bulk *bulk.Table
	// Calls, if set, is offered each call read (a request with an id,
	// booked), before go-sdk sees it: nil leaves it to go-sdk; else the
	// returned func answers it, run on a goroutine of its own under a
	// context (Connect's) that ends when the caller cancels the call or
	// the session ends, and its answer is written as go-sdk's are (the
	// books kept: a cancelled call's is not). serve --only's fast path
	// (tools.Service.OnlyCalls) takes a warm tools/call this way.
	Calls func(*jsonrpc.Request) func(context.Context) *jsonrpc.Response
}

// Connect implements mcp.Transport. It starts the goroutine that reads lines.
func (t *Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	limit := t.MaxMessageBytes
	if limit <= 0 {
		limit = mcp.DefaultMaxLineLength
	}
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The calls taken, and the goroutines kept to run them, end with the
	// session (Close), not only with ctx: go-sdk's Server.Run hands
	// Connect its own context, which outlives a session that ends with
	// its input.
	ctx, end := context.WithCancel(ctx)
	c := &conn{
		end:      end,
		log:      log,
		limit:    limit,
		drain:    t.DrainTimeout,
		calls:    map[jsonrpc.ID]bool{},
		outgoing: map[jsonrpc.ID]struct{}{},
		bulk:     t.Bulk,
		owners:   map[jsonrpc.ID]*bulk.Owner{},
		base:     ctx,
		offer:    t.Calls,
		taken:    map[jsonrpc.ID]context.CancelFunc{},
		runner:   newRunner(ctx),
	}
	c.frame = lineconn.StartFrame(t.Reader, t.Writer, limit, c.line, nil)
	return c, nil
}

type conn struct {
	frame *lineconn.Frame // the reading goroutine and whole writes (lineconn.Frame)
	log   *slog.Logger
	limit int // the longest line read (MaxMessageBytes)
	drain time.Duration

	mu sync.Mutex
	// calls are the caller's requests read and not yet answered, true once
	// the caller cancelled one. An id leaves before its answer is written:
	// the caller may reuse it as soon as it has read the answer.
	calls     map[jsonrpc.ID]bool
	cancelled int                     // how many of calls are true
	writing   int                     // answers on their way out
	outgoing  map[jsonrpc.ID]struct{} // colibri's own requests to the caller, not yet answered
	idle      chan struct{}           // closed when nothing is pending while drain waits

	bulk   *bulk.Table
	owners map[jsonrpc.ID]*bulk.Owner // the calls in flight whose large strings this face holds (until answered)

	base   context.Context    // Connect's, ended by Close: the calls taken run under it
	end    context.CancelFunc // ends base
	offer  func(*jsonrpc.Request) func(context.Context) *jsonrpc.Response
	taken  map[jsonrpc.ID]context.CancelFunc // the calls in flight that offer took, by id
	runner *runner                           // where they run
}

func (c *conn) SessionID() string { return "" }

// line is what the face makes of one line (lineconn.Frame): the message
// that decodes, handed on; what does not is answered here, and the reading
// goes on. Only the end of the input (or a read error) ends it.
func (c *conn) line(parts [][]byte, n int, tooLong bool) (jsonrpc.Message, error) {
	if tooLong {
		c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message larger than %d bytes", c.limit), "too large", n)
		return nil, nil
	}
	if parts = trimLine(parts); len(parts) == 0 {
		return nil, nil
	}
	if msg := c.decode(parts); msg != nil {
		return msg, nil
	}
	return nil, nil
}

// byteOrderMark is U+FEFF in UTF-8, which some Windows tools put before
// every text they write.
var byteOrderMark = []byte("\xef\xbb\xbf")

// trimLine drops the white space around a line (its parts, as read) and a
// byte order mark before it: RFC 8259 section 8.1 lets a parser ignore one
// "in the interests of interoperability".
func trimLine(parts [][]byte) [][]byte {
	parts = lineconn.TrimSpace(parts)
	if rest, ok := lineconn.CutPrefix(parts, byteOrderMark); ok {
		parts = lineconn.TrimSpace(rest)
	}
	return parts
}

// decode returns the message of one line, or nil after answering (or
// dropping) a line that is not one.
func (c *conn) decode(parts [][]byte) jsonrpc.Message {
	// The large strings of a tools/call's arguments wait in the bulk table,
	// kept as pieces of the parts, while go-sdk handles the call; text is
	// what go-sdk decodes, and what this function reads (the same message,
	// but for those strings).
	size := lineconn.Len(parts)
	text, refs := c.bulk.LiftParts(parts, "params", "arguments")
	if refs != nil {
		// Only a call booked below keeps them: its request owns them
		// (bulk.Owner), held by this face until it is answered.
		defer func() { c.bulk.Release(refs...) }()
	}
	// One pass of its own: go-sdk's decoder ignores what follows the first
	// value, so "{…} {…}" would otherwise pass as its first half. (text is
	// valid exactly when line is: internal/bulk lifts only valid strings.)
	if !json.Valid(text) {
		c.reject(jsonrpc.ID{}, jsonrpc.CodeParseError, "parse error: not one JSON value", "not JSON", size)
		return nil
	}
	if text[0] == '[' {
		// go-sdk accepts batches only before 2025-06-18 and ends the session
		// on some bad ones; colibri answers each line on its own.
		c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message per line", "batch", size)
		return nil
	}
	// What colibri's checks and the server behind it could read two ways
	// is refused before go-sdk reads it (docs/protocol.md, "Strict
	// reading"). (The large strings lifted out of text are clean: bulk
	// lifts only valid UTF-8 without escaped surrogates.)
	if _, problem := strict.Check(text, strict.FromCaller); problem != nil {
		code := int64(jsonrpc.CodeInvalidRequest)
		if problem.InParams {
			code = jsonrpc.CodeInvalidParams
		}
		id := readableID(text)
		if problem.Pointer == "/id" {
			id = jsonrpc.ID{} // which of its ids would be a guess
		}
		c.reject(id, code, "invalid request: "+problem.Error(), "read two ways", size)
		return nil
	}
	msg, err := lineconn.DecodeMessage(text)
	if r, ok := msg.(*jsonrpc.Request); refs != nil && (err != nil || !ok || !r.IsCall() || r.Method != "tools/call") {
		// Only a call's arguments are lifted: anything else is decoded whole.
		c.bulk.Release(refs...)
		text, refs = lineconn.Join(parts), nil
		msg, err = lineconn.DecodeMessage(text)
	}
	if err != nil {
		c.reject(readableID(text), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error(), "invalid request", size)
		return nil
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		notification := strings.HasPrefix(m.Method, "notifications/")
		// (A notification written with "id": null is taken as meant, as
		// go-sdk always took it.)
		if m.ID.IsValid() || !notification {
			if problem := idProblem(text, m.ID); problem != "" {
				c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "invalid request: "+problem, "unanswerable id", size)
				return nil
			}
		}
		if m.ID.IsValid() && notification {
			// go-sdk would still act on it (a "notifications/cancelled" with
			// an id cancels the call it names) and then answer it.
			c.reject(m.ID, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: %q is a notification, which has no id", m.Method), "notification with an id", size)
			return nil
		}
		switch {
		case m.IsCall():
			if !c.book(m.ID, &refs) {
				c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: id %v is already used by a request in flight", m.ID.Raw()), "id in use", size)
				return nil
			}
			if c.take(m) {
				return nil // answered by Calls' func, not go-sdk
			}
		case m.Method == "notifications/cancelled":
			if !c.cancel(m.Params) {
				// No call in flight by that id: it was answered as the
				// caller gave up on it, or never was. go-sdk cancels
				// asynchronously, and would hit a later call that reuses
				// the id.
				c.log.Debug("stdio: ignored a cancellation of no call in flight")
				return nil
			}
		}
	case *jsonrpc.Response:
		if idProblem(text, m.ID) != "" || !c.expected(m.ID) {
			// JSON-RPC answers no response; go-sdk would drop it unsaid.
			c.log.Warn("stdio: dropped a response to no request colibri made", "bytes", size)
			return nil
		}
	}
	return msg
}

// book enters a call of the caller's, and the strings lifted from it
// (*refs, taken: the call's request owns them, and this face holds it until
// the answer is written; bulk.Owner); it
// reports false when its id is already in flight. (go-sdk would drop such a
// call without an answer, and a cancelled call is in flight until its
// handler returns.)
func (c *conn) book(id jsonrpc.ID, refs *[]bulk.Ref) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, inUse := c.calls[id]; inUse {
		return false
	}
	c.calls[id] = false
	if *refs != nil {
		c.owners[id], *refs = c.bulk.Own(*refs), nil
	}
	return true
}

// take offers a booked call to Transport.Calls, and runs the func that
// answers it when one is returned: it reports whether the call was taken.
func (c *conn) take(m *jsonrpc.Request) bool {
	if c.offer == nil {
		return false
	}
	answer := c.offer(m)
	if answer == nil {
		return false
	}
	ctx, cancel := context.WithCancel(c.base)
	c.mu.Lock()
	c.taken[m.ID] = cancel
	c.mu.Unlock()
	c.runner.run(func() {
		defer cancel()
		res := answer(ctx)
		c.mu.Lock()
		delete(c.taken, m.ID)
		c.mu.Unlock()
		if res == nil {
			res = &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "colibri: internal error: no answer"}}
		}
		if err := c.Write(context.WithoutCancel(ctx), res); err != nil {
			c.log.Warn("stdio: writing an answer", "err", err)
		}
	})
	return true
}

// cancelTaken ends the context of every call Calls took and still runs
// (id nil), or of the one by id: the caller cancelled it, or the session
// is ending.
func (c *conn) cancelTaken(id *jsonrpc.ID) {
	c.mu.Lock()
	var stop []context.CancelFunc
	for k, f := range c.taken {
		if id == nil || k == *id {
			stop = append(stop, f)
		}
	}
	c.mu.Unlock()
	for _, f := range stop {
		f()
	}
}

// cancel marks the call a notifications/cancelled names as cancelled: its
// answer will not be sent, nor waited for at the end of the input. It
// reports false when no call by that id is in flight (or it was cancelled
// already).
func (c *conn) cancel(params json.RawMessage) bool {
	id, ok := cancelledID(params)
	if !ok {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if was, inFlight := c.calls[id]; !inFlight || was {
		return false
	}
	c.calls[id] = true
	c.cancelled++
	c.settleLocked()
	if f := c.taken[id]; f != nil {
		defer f() // a call go-sdk does not hold: its context ends here
	}
	return true
}

// expected reports whether id answers a request colibri made, and forgets it.
func (c *conn) expected(id jsonrpc.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.outgoing[id]
	delete(c.outgoing, id)
	return ok
}

// cancelledID is the request a notifications/cancelled names, read as
// go-sdk reads it (member names are case-sensitive).
func cancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	var p map[string]json.RawMessage
	var v any
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p["requestId"], &v) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil && id.IsValid()
}

// nullIDError is a JSON-RPC error response with "id": null, which JSON-RPC
// 2.0 section 5 requires when the id could not be read (go-sdk's encoder
// leaves a null id out).
type nullIDError struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      *struct{}      `json:"id"`
	Error   *jsonrpc.Error `json:"error"`
}

// reject answers a line that is not a message, and logs it (never its
// content: it may hold a secret).
func (c *conn) reject(id jsonrpc.ID, code int64, message, reason string, size int) {
	if id.IsValid() {
		// An error under the id of a call in flight would pass for its answer.
		c.mu.Lock()
		if _, inFlight := c.calls[id]; inFlight {
			id = jsonrpc.ID{}
		}
		c.mu.Unlock()
	}
	data, err := errorAnswer(id, code, message)
	c.log.Warn("stdio: a line that is not a valid message was answered with an error", "reason", reason, "code", code, "bytes", size)
	if err == nil {
		err = c.writeLine(data)
	}
	if err != nil {
		c.log.Warn("stdio: answering a bad line", "err", err)
	}
}

func (c *conn) writeLine(data []byte) error {
	return c.frame.WriteParts([][]byte{append(data, '\n')})
}

// Read returns the next message. When the input has ended it first waits,
// at most DrainTimeout, until every call read so far is answered: jsonrpc2
// cancels what is still running as soon as Read reports the end.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.frame.Next(ctx)
	if err == nil || ctx.Err() != nil {
		return msg, err
	}
	select {
	case <-c.frame.Closed():
		return nil, io.EOF
	default:
	}
	// The input ended (or could not be read): the calls in flight first.
	c.waitAnswered(ctx)
	c.cancelTaken(nil) // as jsonrpc2 cancels its own once Read reports the end
	return nil, err
}

func (c *conn) waitAnswered(ctx context.Context) {
	c.mu.Lock()
	n := c.pendingLocked()
	if n == 0 || c.drain <= 0 {
		c.mu.Unlock()
		return
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle
	c.mu.Unlock()
	c.log.Info("stdio: input ended; answering the calls in flight", "calls", n, "bound", c.drain)
	t := time.NewTimer(c.drain)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
		c.log.Warn("stdio: calls still in flight at the bound; cancelling them", "bound", c.drain)
	case <-ctx.Done():
	case <-c.frame.Closed():
	}
}

// pendingLocked is how many answers the drain waits for: calls not
// cancelled, and answers being written. c.mu is held.
func (c *conn) pendingLocked() int { return len(c.calls) - c.cancelled + c.writing }

// settleLocked wakes the drain once nothing is pending; c.mu is held.
func (c *conn) settleLocked() {
	if c.idle != nil && c.pendingLocked() == 0 {
		close(c.idle)
		c.idle = nil
	}
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	answering := false
	switch m := msg.(type) {
	case *jsonrpc.Response:
		c.mu.Lock()
		cancelled, ok := c.calls[m.ID]
		if o := c.owners[m.ID]; o != nil {
			// This face is done with the call once its answer is written
			// (the call's own hold ends with its context).
			delete(c.owners, m.ID)
			defer o.Done()
		}
		if ok {
			delete(c.calls, m.ID)
			if cancelled {
				c.cancelled--
			} else {
				c.writing++
				answering = true
			}
		}
		c.mu.Unlock()
		if cancelled {
			// MCP (cancellation): "Receivers of a cancellation notification
			// SHOULD NOT send a response for the cancelled request." go-sdk
			// cancels the handler but still writes what it returns.
			return nil
		}
	case *jsonrpc.Request:
		c.mu.Lock()
		if m.IsCall() {
			c.outgoing[m.ID] = struct{}{} // before the caller can answer it
		} else if m.Method == "notifications/cancelled" {
			if id, ok := cancelledID(m.Params); ok {
				delete(c.outgoing, id) // go-sdk gave up on it: an answer now is stray
			}
		}
		c.mu.Unlock()
	}
	data, err := lineconn.Encode(msg) // with its newline
	if err != nil {
		err = fmt.Errorf("encoding a message: %w", err)
	} else {
		err = c.frame.WriteParts(c.lower(msg, data))
	}
	if answering {
		c.mu.Lock()
		c.writing--
		c.settleLocked()
		c.mu.Unlock()
	}
	return err
}

// errorAnswer is a JSON-RPC error response under id, or under "id": null
// when id is not valid.
func errorAnswer(id jsonrpc.ID, code int64, message string) ([]byte, error) {
	werr := &jsonrpc.Error{Code: code, Message: message}
	if id.IsValid() {
		return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: werr})
	}
	return json.Marshal(nullIDError{JSONRPC: "2.0", Error: werr})
}

// lower puts back the large strings an encoded message refers to (lifted
// from the caller's calls, or from hosted results). A message that refers
// to a string the table no longer has is never written as it is: it is
// replaced by an internal error, under its id when it is an answer (only
// tools/call answers carry references).
func (c *conn) lower(msg jsonrpc.Message, data []byte) [][]byte {
	parts, err := c.bulk.Lower(data)
	if err == nil {
		return parts
	}
	c.log.Error("stdio: a message held a large string colibri no longer has; answering an internal error instead", "err", err)
	var id jsonrpc.ID
	if r, ok := msg.(*jsonrpc.Response); ok {
		id = r.ID
	}
	out, err := errorAnswer(id, jsonrpc.CodeInternalError, "colibri: internal error: part of this message was lost")
	if err != nil {
		return nil
	}
	return [][]byte{out, []byte("\n")}
}

func (c *conn) Close() error {
	return c.frame.Close(func() error {
		c.end() // the calls taken, those still to be, and the runner's goroutines
		c.cancelTaken(nil)
		c.mu.Lock()
		defer c.mu.Unlock()
		for id, o := range c.owners {
			o.Done()
			delete(c.owners, id)
		}
		return nil
	})
}
