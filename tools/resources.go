package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools/describe"
	"github.com/colibri-mcp/colibri-mcp/tools/record"
)

// MCP Apps in aggregate mode: a hosted tool's _meta.ui.resourceUri names a
// ui:// resource (its HTML), which the caller's host reads with
// resources/read. colibri serves exactly those: routed to the server whose
// tool names the URI, under the call gate, the policy of that tool, and
// the audit log (a line whose tool is the URI). Every other URI is not
// found: colibri offers no hosted resources otherwise (docs/protocol.md).

// JSON-RPC codes of colibri's own refusals of a read (the implementation
// range, −32000…−32019); a hosted server's own error answer passes through.
const (
	codeRefused = -32010 // the gate or the policy
	codeFailed  = -32011 // colibri could not read it (spawn, timeout…)
)

// readUI answers a resources/read in aggregate mode.
func (s *Service) readUI(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	srv, tool := s.cat.UIOwner(uri)
	if srv == nil {
		return nil, mcp.ResourceNotFoundError(describe.OneLine(uri, 200))
	}
	if reqctx.ID(ctx) == "" {
		ctx = reqctx.WithID(ctx, reqctx.NewID())
	}
	call := &record.Call{Server: srv.Name, Tool: uri, Note: &record.Note{}}
	ctx = record.WithNote(ctx, call.Note)
	start := time.Now()
	res, err := s.readOwned(ctx, srv, tool, uri)
	var detail *ErrorDetail
	if err != nil {
		if _, hosted := err.(*jsonrpc.Error); !hosted {
			detail = s.detail(err)
		}
	}
	s.rec.Finish(ctx, call, req.GetSession(), nil, detail, start, time.Since(start))
	if detail != nil {
		code := int64(codeFailed)
		if detail.Kind == failure.KindCallDisabled || detail.Kind == failure.KindDenied {
			code = codeRefused
		}
		return nil, &jsonrpc.Error{Code: code, Message: fmt.Sprintf("colibri: %s: %s", detail.Kind, detail.Message)}
	}
	return res, err
}

func (s *Service) readOwned(ctx context.Context, srv *registry.Server, tool *mcp.Tool, uri string) (*mcp.ReadResourceResult, error) {
	if !s.opts.ExternalCall {
		return nil, &failure.Error{Kind: failure.KindCallDisabled, Server: srv.Name,
			Err: errors.New("reading a hosted server's resources is disabled: start colibri-mcp with --external-call or set COLIBRI_MCP_EXTERNAL_CALL=1 (hosted servers are untrusted third-party code)")}
	}
	reg, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	if cur := reg.Servers[srv.Name]; cur == nil || cur.ProcessKey() != srv.ProcessKey() {
		return nil, &failure.Error{Kind: failure.KindUnknownServer, Server: srv.Name, Err: errors.New("the registry changed: list the tools again")}
	}
	d := s.allowed(ctx, reg, srv, tool)
	record.NoteOf(ctx).Decided(d)
	if !d.Allow {
		return nil, &failure.Error{Kind: failure.KindDenied, Server: srv.Name, Tool: tool.Name,
			Err: fmt.Errorf("policy denies %s on %s for this caller (the tool whose UI this is)", tool.Name, srv.Name)}
	}
	return s.opts.Host.ReadResource(ctx, srv, uri, nil)
}

func resourcesCapability(aggregate bool) *mcp.ResourceCapabilities {
	if !aggregate {
		return nil
	}
	return &mcp.ResourceCapabilities{}
}
