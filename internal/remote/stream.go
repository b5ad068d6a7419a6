package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The standalone GET stream of Streamable HTTP ("Listening for Messages
// from the Server"): after initialize, go-sdk's client connection opens it
// from a hook the session finds by asserting an unexported interface on the
// connection (sessionUpdated), so the connection must reach the session as
// go-sdk made it. colibri's additions live below it, in the HTTP client:
// the relay of progress and logs (eventBody), the bounds, and these rules
// for the stream's GETs, which go-sdk makes under its connection's own
// context (values of Connect's, no deadline):
//
//   - its answer is awaited streamWait at most: go-sdk waits for it inside
//     Connect, with no bound of its own; a server that does not answer in
//     time is taken to have answered 405 (it offers no stream), which the
//     specification allows and go-sdk accepts;
//   - a reconnection waits streamGap after the previous GET began, whatever
//     retry the server asks: a server that ends the stream at once cannot
//     make colibri loop;
//   - a message past Options.MaxBytes on it ends the session (Options.Ended),
//     and no GET is made again: the next one waits for Close;
//   - Close ends it, and any GET still waiting.
const (
	maxStreamWait = 5 * time.Second
	streamGap     = time.Second
)

// standaloneKey marks the context of a Streamable HTTP connection: the
// requests made under it, and not under a request's own, are the GET
// stream's (and the DELETE that ends the session).
type standaloneKey struct{}

// streamTransport is go-sdk's Streamable HTTP client transport, whose
// connection it returns unwrapped.
type streamTransport struct {
	inner *mcp.StreamableClientTransport
}

func (t streamTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	// The connection keeps ctx's values for its own requests: not the
	// Exchange of the initialize phase, which its GETs would overwrite.
	ctx = context.WithValue(ctx, exchangeKey{}, (*Exchange)(nil))
	return t.inner.Connect(context.WithValue(ctx, standaloneKey{}, true))
}

// streamState is what the Conn remembers of its standalone stream.
type streamState struct {
	mu    sync.Mutex
	last  time.Time // when the last GET began
	ended bool      // the stream broke the session: no more GETs
}

var (
	errNoAnswer = errors.New("no answer to the standalone GET")
	errClosed   = errors.New("the connection was closed")
)

func (c *Conn) streamWait() time.Duration {
	if d := c.opts.Timeout / 3; d > 0 && d < maxStreamWait {
		return d
	}
	return maxStreamWait
}

// standalone sends r, a GET of the standalone stream, under the rules
// above.
func (t *roundTripper) standalone(r *http.Request) (*http.Response, error) {
	c := t.c
	if err := c.pace(r.Context()); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	stopLife := context.AfterFunc(c.life, func() { cancel(errClosed) })
	release := func() {
		stopLife()
		cancel(nil)
	}
	timer := time.AfterFunc(c.streamWait(), func() { cancel(errNoAnswer) })
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	inTime := timer.Stop()
	if !inTime && context.Cause(ctx) == errNoAnswer {
		if err == nil {
			resp.Body.Close()
		}
		release()
		return notAllowed(r), nil
	}
	if err != nil {
		release()
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		resp.Body = &eventBody{c: c, rc: resp.Body, relay: c.relayFunc(), tooLarge: c.streamTooLarge, keepIDs: true}
	} else {
		resp.Body = &limitBody{c: c, rc: resp.Body}
	}
	resp.Body = &releaseBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// pace waits until the next GET may begin: streamGap after the last one,
// or, once the stream has broken the session, until the connection closes.
func (c *Conn) pace(ctx context.Context) error {
	now := time.Now()
	c.stream.mu.Lock()
	ended := c.stream.ended
	wait := time.Duration(0)
	if !c.stream.last.IsZero() {
		wait = c.stream.last.Add(streamGap).Sub(now)
	}
	c.stream.last = now.Add(max(wait, 0))
	c.stream.mu.Unlock()
	var tick <-chan time.Time
	switch {
	case ended:
		// Only the connection's end ends this wait.
	case wait <= 0:
		return nil
	default:
		t := time.NewTimer(wait)
		defer t.Stop()
		tick = t.C
	}
	select {
	case <-tick:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.life.Done():
		return errClosed
	}
}

// streamTooLarge is a message past MaxBytes on the standalone stream: no
// request's, so no request fails with too_large; the session ends.
func (c *Conn) streamTooLarge() {
	c.stream.mu.Lock()
	first := !c.stream.ended
	c.stream.ended = true
	c.stream.mu.Unlock()
	if first && c.opts.Ended != nil {
		c.opts.Ended(fmt.Sprintf("sent a message larger than %d bytes (COLIBRI_MCP_MAX_RESULT_BYTES) on its GET stream", c.opts.MaxBytes))
	}
}

// notAllowed is the answer of a server without a standalone stream.
func notAllowed(r *http.Request) *http.Response {
	return &http.Response{
		Status: "405 Method Not Allowed", StatusCode: http.StatusMethodNotAllowed,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: http.NoBody, Request: r,
	}
}

// releaseBody calls release once it is closed.
type releaseBody struct {
	io.ReadCloser
	release func()
	once    sync.Once
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
