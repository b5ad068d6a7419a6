package remote

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// autoTransport is "transport": "auto", the backwards compatibility of the
// MCP transports specification (2025-03-26 and later, "Backwards
// Compatibility"): "Attempt to POST an InitializeRequest to the server URL
// ... If it fails with an HTTP 4xx status code (e.g., 405 Method Not Allowed
// or 404 Not Found): Issue a GET request to the server URL, expecting that
// this will open an SSE stream and return an endpoint event as the first
// event." colibri falls back on 400, 404 and 405 only: a 401 or 403 is a
// credentials problem, which SSE would not solve.
type autoTransport struct{ c *Conn }

func (t *autoTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.c.streamable().Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &autoConn{c: t.c, cur: conn, decided: make(chan struct{})}, nil
}

// autoConn is the Streamable HTTP connection until its first write (the
// initialize request) is refused as above; then the SSE one.
type autoConn struct {
	c *Conn

	mu      sync.Mutex
	cur     mcp.Connection
	decided chan struct{} // closed once the first write went through one way or the other
	once    sync.Once
}

func (a *autoConn) current() mcp.Connection {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur
}

func (a *autoConn) decide() { a.once.Do(func() { close(a.decided) }) }

func (a *autoConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		cur := a.current()
		msg, err := cur.Read(ctx)
		if err == nil || ctx.Err() != nil {
			return msg, err
		}
		// A refused initialize fails the Streamable connection, and so
		// its reads, before the write has decided on SSE: wait for the
		// decision, and read from the new connection if there is one.
		select {
		case <-a.decided:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if a.current() == cur {
			return msg, err
		}
	}
}

func (a *autoConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-a.decided:
		return a.current().Write(ctx, msg)
	default:
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "server/discover" {
		// The probe of MCP 2026-07-28, before initialize: a server before
		// it refuses it (400, 404) whatever its transport, and initialize
		// decides.
		return a.current().Write(ctx, msg)
	}
	defer a.decide()
	wctx, x := Track(ctx)
	err := a.current().Write(wctx, msg)
	status, _, _ := x.Snapshot()
	if err == nil || !(status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusMethodNotAllowed) {
		return err
	}
	sse, serr := a.c.sse().Connect(ctx)
	if serr != nil {
		return fmt.Errorf("%w (and the URL opens no SSE stream either: %v)", err, serr)
	}
	if err := sse.Write(ctx, msg); err != nil {
		sse.Close()
		return err
	}
	a.mu.Lock()
	old := a.cur
	a.cur = sse
	a.mu.Unlock()
	old.Close()
	return nil
}

func (a *autoConn) Close() error {
	return a.current().Close()
}

func (a *autoConn) SessionID() string {
	return a.current().SessionID()
}
