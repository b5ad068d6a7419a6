// Package stdioserve is colibri's stdio face: newline-delimited JSON-RPC on
// a pair of streams, as an [mcp.Transport] for go-sdk's server, that survives
// a careless or hostile caller.
//
// go-sdk's own [mcp.IOTransport] ends the session on the first line it cannot
// decode (not JSON, nested too deep, a wrong "jsonrpc", an object as id, a
// line over its limit): the JSON decoder that frames its stream cannot resume
// after an error, and any error from Connection.Read ends a jsonrpc2
// connection. This transport frames lines itself, decodes each with go-sdk's
// own [jsonrpc.DecodeMessage], and answers a line that does not decode with a
// JSON-RPC error (-32700 parse error, -32600 invalid request; with the line's
// id when it can be read, else null), then reads on. When the input ends,
// calls in flight are answered (bounded by DrainTimeout) before Read reports
// the end.
//
//	t := &stdioserve.Transport{Reader: os.Stdin, Writer: os.Stdout, MaxMessageBytes: 17 << 20, DrainTimeout: 10 * time.Second}
//	err := server.Run(ctx, t)
package stdioserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport serves one MCP session over Reader and Writer.
type Transport struct {
	Reader io.Reader
	Writer io.Writer
	// MaxMessageBytes bounds one line (one message); a longer line is
	// skipped, never held whole, and answered with -32600. Zero means
	// mcp.DefaultMaxLineLength.
	MaxMessageBytes int
	// DrainTimeout bounds how long, once the input has ended, calls in
	// flight may take to be answered. Zero: the end is reported at once.
	DrainTimeout time.Duration
	// Logger receives a warning for each line answered with an error (its
	// size and the reason, never its content). Nil discards.
	Logger *slog.Logger
}

// Connect implements mcp.Transport. It starts the goroutine that reads lines.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxMessageBytes
	if limit <= 0 {
		limit = mcp.DefaultMaxLineLength
	}
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &conn{
		w:        t.Writer,
		log:      log,
		drain:    t.DrainTimeout,
		incoming: make(chan msgOrErr),
		closed:   make(chan struct{}),
		inflight: map[jsonrpc.ID]struct{}{},
	}
	go c.readLoop(bufio.NewReaderSize(t.Reader, 64<<10), limit)
	return c, nil
}

type msgOrErr struct {
	msg jsonrpc.Message
	err error
}

type conn struct {
	w     io.Writer
	wmu   sync.Mutex // one message per Write, whole
	log   *slog.Logger
	drain time.Duration

	incoming  chan msgOrErr // messages in order, then the read error (io.EOF)
	closed    chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	inflight map[jsonrpc.ID]struct{} // calls read and not yet answered
	idle     chan struct{}           // closed when inflight empties while drain waits
}

func (c *conn) SessionID() string { return "" }

// readLoop reads one line at a time and hands on what decodes; it answers
// what does not, itself, and goes on. Only the end of the input (or a read
// error) ends it.
func (c *conn) readLoop(r *bufio.Reader, limit int) {
	for {
		line, tooLong, err := readLine(r, limit)
		if tooLong {
			c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message larger than %d bytes", limit), "too large", 0)
		} else if line = bytes.TrimSpace(line); len(line) > 0 {
			if msg := c.decode(line); msg != nil {
				select {
				case c.incoming <- msgOrErr{msg: msg}:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			select {
			case c.incoming <- msgOrErr{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// readLine reads up to and without the next newline. A line longer than limit
// is read to its end but not kept: tooLong is set and line is nil. err is the
// read error after the line (io.EOF at the end of the input).
func readLine(r *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit+1 { // +1: the newline itself
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, tooLong, err
	}
}

// decode returns the message of one line, or nil after answering a line that
// is not one.
func (c *conn) decode(line []byte) jsonrpc.Message {
	// One pass of its own: go-sdk's decoder ignores what follows the first
	// value, so "{…} {…}" would otherwise pass as its first half.
	if !json.Valid(line) {
		c.reject(jsonrpc.ID{}, jsonrpc.CodeParseError, "parse error: not one JSON value", "not JSON", len(line))
		return nil
	}
	if line[0] == '[' {
		// go-sdk accepts batches only before 2025-06-18 and ends the session
		// on some bad ones; colibri answers each line on its own.
		c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message per line", "batch", len(line))
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.reject(readableID(line), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error(), "invalid request", len(line))
		return nil
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.mu.Lock()
		switch {
		case req.IsCall():
			c.inflight[req.ID] = struct{}{}
		case req.Method == "notifications/cancelled":
			// The caller wants no answer (and QuietCancel sees that none is
			// written): the drain does not wait for one.
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
					c.answeredLocked(id)
				}
			}
		}
		c.mu.Unlock()
	}
	return msg
}

// readableID is the id of a JSON object line when it is a string or a number,
// else the null id.
func readableID(line []byte) jsonrpc.ID {
	var probe struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &probe) != nil {
		return jsonrpc.ID{}
	}
	id, err := jsonrpc.MakeID(probe.ID)
	if err != nil {
		return jsonrpc.ID{}
	}
	return id
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
	werr := &jsonrpc.Error{Code: code, Message: message}
	var data []byte
	var err error
	if id.IsValid() {
		data, err = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: werr})
	} else {
		data, err = json.Marshal(nullIDError{JSONRPC: "2.0", Error: werr})
	}
	c.log.Warn("stdio: a line that is not a valid message was answered with an error", "reason", reason, "code", code, "bytes", size)
	if err == nil {
		err = c.writeLine(data)
	}
	if err != nil {
		c.log.Warn("stdio: answering a bad line", "err", err)
	}
}

func (c *conn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(data, '\n'))
	return err
}

// Read returns the next message. When the input has ended it first waits,
// at most DrainTimeout, until every call read so far is answered: jsonrpc2
// cancels what is still running as soon as Read reports the end.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m := <-c.incoming:
		if m.err != nil {
			c.waitAnswered(ctx)
			return nil, m.err
		}
		return m.msg, nil
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *conn) waitAnswered(ctx context.Context) {
	c.mu.Lock()
	n := len(c.inflight)
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
	case <-c.closed:
	}
}

// answeredLocked forgets a call; c.mu is held.
func (c *conn) answeredLocked(id jsonrpc.ID) {
	delete(c.inflight, id)
	if len(c.inflight) == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	err = c.writeLine(data)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		c.answeredLocked(resp.ID)
		c.mu.Unlock()
	}
	return err
}

func (c *conn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}
