package lineconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Requests sent below go-sdk's session (docs/benchmarks.md, "The serve
// --only hop"): a request colibri relays as it came — serve --only's warm
// tools/call — is written with go-sdk's own jsonrpc types under an id of
// colibri's own ("colibri-direct-N": go-sdk's client numbers its requests,
// so neither can take the other's), and its answer is handed back as read,
// its result undecoded, never reaching go-sdk's client. Everything else on
// the connection (initialize, lists, the server's requests and
// notifications) stays go-sdk's.

// ErrNotConnected is Call's error before Connect, or after the connection
// ended.
var ErrNotConnected = errors.New("lineconn: the connection is not open")

// directIDs numbers the requests of every connection: an id is never
// reused, so a late answer to an abandoned request cannot pass for a
// newer one's.
var directIDs atomic.Uint64

// maxAbandoned bounds the abandoned requests a connection remembers, so
// that their late answers are dropped rather than handed to go-sdk: past
// it the oldest are forgotten (go-sdk then drops such an answer itself).
const maxAbandoned = 256

// directCalls are a connection's requests in flight below go-sdk.
type directCalls struct {
	mu        sync.Mutex
	waiting   map[jsonrpc.ID]chan *jsonrpc.Response
	abandoned map[jsonrpc.ID]bool
	order     []jsonrpc.ID // abandoned, oldest first
	err       error        // set once the connection has ended
}

// take hands r to its request's waiter, or drops an answer to an
// abandoned one; it reports whether r was a direct request's.
func (d *directCalls) take(r *jsonrpc.Response) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ch, ok := d.waiting[r.ID]; ok {
		delete(d.waiting, r.ID)
		ch <- r // buffered: never blocks the reader
		return true
	}
	if d.abandoned[r.ID] {
		delete(d.abandoned, r.ID)
		return true
	}
	return false
}

// end fails every request still waiting: the connection is gone.
func (d *directCalls) end(err error) {
	if err == nil {
		err = ErrNotConnected
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		d.err = err
	}
	for id, ch := range d.waiting {
		delete(d.waiting, id)
		close(ch)
	}
}

func (d *directCalls) add(id jsonrpc.ID) (chan *jsonrpc.Response, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	if d.waiting == nil {
		d.waiting = map[jsonrpc.ID]chan *jsonrpc.Response{}
	}
	ch := make(chan *jsonrpc.Response, 1)
	d.waiting[id] = ch
	return ch, nil
}

// abandon forgets a request whose caller stopped waiting; its answer, if
// it comes, is dropped.
func (d *directCalls) abandon(id jsonrpc.ID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.waiting[id]; !ok {
		return // answered meanwhile (dropped by the waiter) or ended
	}
	delete(d.waiting, id)
	if d.abandoned == nil {
		d.abandoned = map[jsonrpc.ID]bool{}
	}
	d.abandoned[id] = true
	d.order = append(d.order, id)
	if len(d.order) > maxAbandoned {
		delete(d.abandoned, d.order[0])
		d.order = d.order[1:]
	}
}

// Call sends one request below go-sdk's session and waits for its answer:
// the result as read (undecoded: what the server's line held, checked as
// every line is), or the server's JSON-RPC error as a *jsonrpc.Error. When
// ctx ends first, the server is told (notifications/cancelled naming the
// request, as go-sdk's client tells it) and ctx's error returned; its
// answer, if it comes, is dropped. The connection ending fails it with the
// read's error (io.EOF, a line that is not a message).
//
// params is sent as it is. ctx is the request's: a tools/call written for
// a caller's request that owns large strings lifts its result's (Bulk).
func (t *Transport) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	c := t.connected()
	if c == nil {
		return nil, ErrNotConnected
	}
	id, err := jsonrpc.MakeID("colibri-direct-" + strconv.FormatUint(directIDs.Add(1), 10))
	if err != nil {
		return nil, err
	}
	ch, err := c.direct.add(id)
	if err != nil {
		return nil, err
	}
	if err := c.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		c.direct.abandon(id)
		return nil, fmt.Errorf("writing %s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, c.direct.ended()
		}
		if r.Error != nil {
			var rpcErr *jsonrpc.Error
			if errors.As(r.Error, &rpcErr) {
				return nil, rpcErr
			}
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		c.direct.abandon(id)
		// What go-sdk's client sends when a call's context ends
		// (MCP, cancellation): the server may stop, and answers nothing.
		note, err := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": ctx.Err().Error()})
		if err == nil {
			_ = c.Write(context.WithoutCancel(ctx), &jsonrpc.Request{Method: "notifications/cancelled", Params: note})
		}
		return nil, ctx.Err()
	}
}

func (d *directCalls) ended() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		return ErrNotConnected
	}
	return d.err
}

// connected is the connection Connect made, or nil.
func (t *Transport) connected() *conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conn
}
