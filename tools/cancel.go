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
func QuietCancel(t mcp.Transport) mcp.Transport { return &quietTransport{t} }

type quietTransport struct{ inner mcp.Transport }

func (t *quietTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &quietConn{Connection: c, cancelled: map[jsonrpc.ID]bool{}}, nil
}

type quietConn struct {
	mcp.Connection
	mu        sync.Mutex
	cancelled map[jsonrpc.ID]bool // requests the caller cancelled, not yet answered
}

func (c *quietConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && req.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
				c.mu.Lock()
				c.cancelled[id] = true
				c.mu.Unlock()
			}
		}
	}
	return msg, err
}

func (c *quietConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		drop := c.cancelled[resp.ID]
		delete(c.cancelled, resp.ID)
		c.mu.Unlock()
		if drop {
			return nil
		}
	}
	return c.Connection.Write(ctx, msg)
}
