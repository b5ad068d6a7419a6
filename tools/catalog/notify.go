package catalog

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// One publish, one notifications/tools/list_changed.
//
// go-sdk sends a session notifications/tools/list_changed 10 ms after the
// last change of its server's tools (AddTool, RemoveTools: one change a
// tool), and publish makes one change per tool that changed. When those
// changes take longer than 10 ms (a loaded machine, or many hosted tools)
// go-sdk sends one notification during the publish and another after it:
// a client that lists on the first reads a catalog half brought up to date,
// and lists again on the second.
//
// So every list_changed go-sdk sends first waits for the publish under way
// (it takes the catalog's lock, which a publish holds), and a session is
// sent one only for a publish it has not been told of yet: the first after
// a publish tells it of everything that publish changed, and the rest, due
// to the same changes, are dropped.

const toolListChanged = "notifications/tools/list_changed"

// afterChange, when set, is called after each tool a publish adds to a
// server, with the catalog's lock held: a test stretches a publish past
// go-sdk's 10 ms with it, as a loaded machine does.
var afterChange func()

// coalesce is the catalog's sending middleware on every server it is
// attached to (see above).
func (c *Catalog) coalesce(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != toolListChanged {
			return next(ctx, method, req)
		}
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && !c.tell(ss) {
			return nil, nil // told of these changes already
		}
		return next(ctx, method, req)
	}
}

// tell reports whether ss is to be sent a list_changed now, once the
// publish under way (if any) is over: not when it was sent one after the
// last publish that changed anything.
func (c *Catalog) tell(ss *mcp.ServerSession) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen, ok := c.told[ss]; ok && gen == c.changes {
		return false
	}
	if c.told == nil {
		c.told = map[*mcp.ServerSession]uint64{}
	}
	c.told[ss] = c.changes
	if len(c.told) > c.toldBound {
		// Forget the sessions that have ended; the bound grows with the
		// sessions alive, so that this costs O(1) a notification.
		live := map[*mcp.ServerSession]bool{}
		for _, server := range c.servers {
			for s := range server.Sessions() {
				live[s] = true
			}
		}
		for s := range c.told {
			if !live[s] {
				delete(c.told, s)
			}
		}
		c.toldBound = 2*len(c.told) + 64
	}
	return true
}
