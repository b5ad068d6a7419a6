package tools

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/instance"
)

// List cursors are this instance's (docs/scaling.md, "Several instances").
// go-sdk's cursor is the last name of a page, which any instance would
// read as a place in its own list; colibri hands each out sealed
// (internal/instance, kind "cursor") and bound to its list, and opens the
// cursor a caller sends back before go-sdk reads it. Another instance's
// cursor, or this one's before a restart, is −32602 "list again" (the
// caller lists from the start); one this instance did not seal, or sealed
// for another list, is refused (−32602) as invalid.

const cursorKind = "cursor"

// sealCursors is the receiving middleware that seals the cursors of every
// list colibri answers (tools, prompts, resources, templates) and opens
// the ones its callers send.
func (s *Service) sealCursors(next mcp.MethodHandler) mcp.MethodHandler {
	sealer := s.opts.Sealer
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		cursor := cursorOf(req)
		if cursor == nil {
			return next(ctx, method, req)
		}
		if *cursor != "" {
			inner, err := openCursor(sealer, method, *cursor, time.Now())
			if err != nil {
				s.log.DebugContext(ctx, "a list cursor refused", "method", method, "err", err)
				return nil, err
			}
			*cursor = inner
		}
		res, err := next(ctx, method, req)
		if nc := nextCursorOf(res); err == nil && nc != nil && *nc != "" {
			*nc = sealer.Seal(cursorKind, []byte(method+"\x00"+*nc), time.Time{})
		}
		return res, err
	}
}

// openCursor is go-sdk's cursor that sealed stands for in method's list,
// or the −32602 error a caller is answered.
func openCursor(sealer *instance.Sealer, method, sealed string, now time.Time) (string, error) {
	payload, err := sealer.Open(cursorKind, sealed, now)
	switch {
	case errors.Is(err, instance.ErrForeign) || errors.Is(err, instance.ErrStale):
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "list again: this cursor is another instance's, or this one's before a restart (" + err.Error() + "); list " + method + " from the start"}
	case err != nil:
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "invalid cursor: not one this instance issued (" + err.Error() + "); refused"}
	}
	for i, c := range payload {
		if c == 0 {
			if string(payload[:i]) != method {
				break
			}
			return string(payload[i+1:]), nil
		}
	}
	return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor: issued for another list than " + method + "; refused"}
}

// cursorOf is the cursor field of a list request's params, or nil when req
// is no list.
func cursorOf(req mcp.Request) *string {
	// A list sent without params has typed nil ones: no cursor.
	switch p := req.GetParams().(type) {
	case *mcp.ListToolsParams:
		if p != nil {
			return &p.Cursor
		}
	case *mcp.ListPromptsParams:
		if p != nil {
			return &p.Cursor
		}
	case *mcp.ListResourcesParams:
		if p != nil {
			return &p.Cursor
		}
	case *mcp.ListResourceTemplatesParams:
		if p != nil {
			return &p.Cursor
		}
	}
	return nil
}

// nextCursorOf is the nextCursor field of a list's result, or nil.
func nextCursorOf(res mcp.Result) *string {
	switch r := res.(type) {
	case *mcp.ListToolsResult:
		if r != nil {
			return &r.NextCursor
		}
	case *mcp.ListPromptsResult:
		if r != nil {
			return &r.NextCursor
		}
	case *mcp.ListResourcesResult:
		if r != nil {
			return &r.NextCursor
		}
	case *mcp.ListResourceTemplatesResult:
		if r != nil {
			return &r.NextCursor
		}
	}
	return nil
}
