package host

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// ReadResource reads one resource of srv (aggregate mode serves the ui://
// resources of MCP Apps tools this way): on a session leased as a call's
// is, within the call timeout, offered no capability of the caller's (a
// read asks the caller nothing). Starting and listing are retried as for a
// call; the read itself is not.
func (h *Host) ReadResource(ctx context.Context, srv *registry.Server, uri string, caller *session.Caller) (*mcp.ReadResourceResult, error) {
	var res *mcp.ReadResourceResult
	err := h.leased(ctx, srv, caller.Listing(), false, func(ctx context.Context, l *lease) error {
		var err error
		res, err = l.s.ReadResource(ctx, uri)
		return err
	})
	return res, err
}
