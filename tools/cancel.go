package tools

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// QuietCancel wraps colibri's own transport so that a request the caller
// cancelled gets no response, as the MCP spec asks of the receiver of
// notifications/cancelled ("SHOULD NOT send a response for the cancelled
// request"). go-sdk cancels the handler but still writes what it returns.
//
// Only a request still in flight can be cancelled: a cancellation that
// arrives after the answer (or names an id never seen) is ignored, so that a
// later request reusing the id gets its answer. What the filter remembers is
// bounded by the requests in flight, and at most maxCancelled of them.
func QuietCancel(t mcp.Transport) mcp.Transport { return &quietTransport{t} }

// maxCancelled bounds the cancelled ids remembered at once. Past it, a
// cancelled request's answer is sent after all: harmless, since the spec
// has callers ignore a response that arrives after they cancelled.
const maxCancelled = 4096

type quietTransport struct{ inner mcp.Transport }

func (t *quietTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &quietConn{Connection: c, inflight: map[jsonrpc.ID]bool{}}, nil
}

type quietConn struct {
	mcp.Connection
	mu        sync.Mutex
	inflight  map[jsonrpc.ID]bool // requests read and not yet answered: true when the caller cancelled
	cancelled int                 // how many of inflight are true
}

func (c *quietConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	req, ok := msg.(*jsonrpc.Request)
	switch {
	case !ok:
	case req.IsCall():
		c.mu.Lock()
		if c.inflight[req.ID] {
			c.cancelled-- // a reused id: the new request is not cancelled
		}
		c.inflight[req.ID] = false
		c.mu.Unlock()
	case req.Method == "notifications/cancelled":
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
				c.mu.Lock()
				if was, ok := c.inflight[id]; ok && !was && c.cancelled < maxCancelled {
					c.inflight[id] = true
					c.cancelled++
				}
				c.mu.Unlock()
			}
		}
	}
	return msg, err
}

func (c *quietConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		drop := c.inflight[resp.ID]
		if drop {
			c.cancelled--
		}
		delete(c.inflight, resp.ID)
		c.mu.Unlock()
		if drop {
			return nil
		}
	}
	return c.Connection.Write(ctx, msg)
}
