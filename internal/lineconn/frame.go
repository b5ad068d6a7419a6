package lineconn

import (
	"bufio"
	"context"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Frame is the moving parts of a line-framed JSON-RPC connection, the one
// both of colibri's have: the hosted server's stdio (Transport) and
// colibri's own stdio face (internal/stdioserve). One goroutine reads line
// by line and hands each line to its owner's Line, in read order; Next
// returns the messages Line made, then the error that ended the reading;
// WriteParts writes one message whole. What a line means — which are
// refused, answered, relayed or taken — is the owner's: the face's books
// of ids and its refusals, the hosted side's relay and its requests below
// go-sdk.
type Frame struct {
	w   io.Writer
	wmu sync.Mutex // one whole message per write

	incoming  chan msgOrErr // messages in order, then the error that ended the reading
	closed    chan struct{}
	closeOnce sync.Once
}

// Line is what a Frame's owner makes of one line read (its parts, as
// ReadLine gives them, at most limit bytes; tooLong: a longer one, not
// kept): a message to hand on, nothing (nil, nil: the line was answered,
// dropped or taken), or an error, which ends the reading as a read error
// does.
type Line func(parts [][]byte, n int, tooLong bool) (jsonrpc.Message, error)

type msgOrErr struct {
	msg jsonrpc.Message
	err error
}

// StartFrame starts reading r (lines of at most limit bytes; 0: no limit)
// with line, and returns the Frame that writes to w. ended, if set, is
// told the error that ended the reading (nil when Close did), once, before
// Next reports it.
func StartFrame(r io.Reader, w io.Writer, limit int, line Line, ended func(error)) *Frame {
	f := &Frame{w: w, incoming: make(chan msgOrErr), closed: make(chan struct{})}
	// Reads happen on a goroutine of their own so that Next can return
	// when its context ends or the connection is closed.
	go f.readLoop(bufio.NewReaderSize(r, 64<<10), limit, line, ended)
	return f
}

func (f *Frame) readLoop(r *bufio.Reader, limit int, line Line, ended func(error)) {
	var end error
	if ended != nil {
		defer func() { ended(end) }()
	}
	for {
		parts, n, tooLong, err := ReadLine(r, limit)
		if tooLong || len(parts) > 0 && (err == nil || err == io.EOF) {
			msg, lerr := line(parts, n, tooLong)
			if lerr != nil {
				err = lerr
			} else if msg != nil {
				select {
				case f.incoming <- msgOrErr{msg: msg}:
				case <-f.closed:
					return
				}
			}
		}
		if err != nil {
			end = err
			select {
			case f.incoming <- msgOrErr{err: err}:
			case <-f.closed:
			}
			return
		}
	}
}

// Next returns the next message, or the error that ended the reading
// (io.EOF once the connection is closed).
func (f *Frame) Next(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case v := <-f.incoming:
		return v.msg, v.err
	case <-f.closed:
		return nil, io.EOF
	}
}

// WriteParts writes one message made of parts (a lowered message: see
// internal/bulk) whole: no other message is written between its parts.
func (f *Frame) WriteParts(parts [][]byte) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	for _, p := range parts {
		if _, err := f.w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// Close stops handing on messages; then, the first time only, runs then
// (what closing means to the owner: its pipes closed, its calls
// cancelled) and reports its error.
func (f *Frame) Close(then func() error) error {
	var err error
	f.closeOnce.Do(func() {
		close(f.closed)
		if then != nil {
			err = then()
		}
	})
	return err
}

// Closed is closed once Close was called.
func (f *Frame) Closed() <-chan struct{} { return f.closed }
