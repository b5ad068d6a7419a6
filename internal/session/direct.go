package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
)

// A tools/call relayed below go-sdk's client session (docs/benchmarks.md,
// "The serve --only hop"): serve --only relays a warm call's result to its
// caller as the hosted server wrote it, so decoding it into an
// mcp.CallToolResult (and encoding it again on the face) is work for
// nothing. Everything else of CallTool stays: the phase and its timer, the
// route of the call's progress, logs and server-to-client requests, the
// classification of failures, the request's metrics.

// Direct is a transport that sends a request below go-sdk's session and
// hands back its result as read (lineconn.Transport.Call): a JSON-RPC
// error answer as a *jsonrpc.Error, the context's error when it ended
// first (having told the server), the read's error when the connection
// ended. Open finds it by a type assertion on the upstream's transport.
type Direct interface {
	Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Raw is where CallTool puts the result of a call it relayed below go-sdk,
// for the one who asked for it (WithRaw).
type Raw struct {
	res    *mcp.CallToolResult
	result json.RawMessage
}

type rawKey struct{}

// WithRaw asks CallTool, for the calls made under the returned context, to
// relay the result below go-sdk where the upstream can (a process over
// lineconn, a session that speaks 2025-11-25 or earlier): Raw.Of says
// whether the result a call returned was relayed, and gives its bytes.
func WithRaw(ctx context.Context) (context.Context, *Raw) {
	r := &Raw{}
	return context.WithValue(ctx, rawKey{}, r), r
}

// RawResult is Raw.Of of the Raw ctx carries (WithRaw), or nil.
func RawResult(ctx context.Context, res *mcp.CallToolResult) json.RawMessage {
	return rawFrom(ctx).Of(res)
}

func rawFrom(ctx context.Context) *Raw {
	r, _ := ctx.Value(rawKey{}).(*Raw)
	return r
}

// Of is the result res stands for, as the hosted server wrote it, when
// res is the one CallTool returned for a call it relayed below go-sdk (it
// holds isError alone); else nil.
func (r *Raw) Of(res *mcp.CallToolResult) json.RawMessage {
	if r == nil || res == nil || res != r.res {
		return nil
	}
	return r.result
}

// errNotObject is the failure of a tools/call whose result is not a JSON
// object: it is no CallToolResult.
var errNotObject = errors.New("the result of tools/call is not a JSON object")

// directly reports whether a tools/call may go below go-sdk: the
// transport can, and the session speaks 2025-11-25 or earlier, or
// 2026-07-28 offered no capability of a caller's (its server cannot ask
// for input: go-sdk's client answers input_required rounds, MRTR), once
// go-sdk's per-request _meta was learnt.
func (s *Session) directly() bool {
	if s.direct == nil {
		return false
	}
	return !s.modern || s.plain && s.perRequest.Load() != nil
}

// learnPerRequest is a sending middleware that keeps the per-request
// _meta go-sdk put in a request of a 2026-07-28 session.
func (s *Session) learnPerRequest(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if s.perRequest.Load() == nil {
			if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
				if m := p.GetMeta(); m != nil && m[mcp.MetaKeyProtocolVersion] != nil {
					kept := map[string]any{}
					for _, k := range []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities} {
						if v, ok := m[k]; ok {
							kept[k] = v
						}
					}
					s.perRequest.CompareAndSwap(nil, &kept)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// callDirect sends params below go-sdk and returns what stands for its
// result: an mcp.CallToolResult with isError alone, its bytes kept in raw.
func (s *Session) callDirect(ctx context.Context, raw *Raw, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if s.modern {
		if params.Meta == nil {
			params.Meta = map[string]any{}
		}
		for k, v := range *s.perRequest.Load() {
			if _, ok := params.Meta[k]; !ok {
				params.Meta[k] = v
			}
		}
	}
	body, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	result, err := s.direct.Call(ctx, "tools/call", body)
	if err != nil {
		return nil, err
	}
	obj := bytes.TrimLeft(result, " \t\r\n")
	if bytes.Equal(bytes.TrimRight(obj, " \t\r\n"), []byte("null")) {
		// go-sdk's client reads a null result as an empty one: so does
		// this, and the caller gets go-sdk's encoding of it.
		obj = []byte("{}")
	}
	if len(obj) == 0 || obj[0] != '{' {
		return nil, errNotObject
	}
	// Read as go-sdk's client reads it (readCallToolResult), so that what
	// it refuses (a content block of no type MCP defines, a null one, text
	// that is not a string) fails here too rather than reach the caller as
	// written; isError is kept (the audit line and the metrics tell a
	// tool's failure apart). The line was read strictly (internal/strict):
	// no key differs from MCP's only in case.
	isError, needsInput, whole, err := readCallToolResult(obj)
	if err != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", err) // as go-sdk's client says it
	}
	if needsInput {
		return nil, errInputAsked("input_required")
	}
	if mayHaveResultType(result) {
		// Another resultType than "complete" (go-sdk keeps the value
		// unexported): read again only where the bytes may name one.
		var head struct {
			ResultType string `json:"resultType"`
		}
		if err := json.Unmarshal(result, &head); err != nil {
			return nil, err
		}
		if head.ResultType != "" && head.ResultType != "complete" {
			return nil, errInputAsked(head.ResultType)
		}
	}
	if !whole {
		// Not to be relayed as written (readCallToolResult): decoded as
		// go-sdk's client decodes it, and encoded for the caller as
		// go-sdk's path would (a null content becomes [], isError: null
		// goes, a text block gets its text).
		res := &mcp.CallToolResult{}
		if err := res.UnmarshalJSON(obj); err != nil {
			return nil, fmt.Errorf("calling %q: %w", "tools/call", err)
		}
		return res, nil
	}
	res := &mcp.CallToolResult{IsError: isError}
	raw.res, raw.result = res, result
	return res, nil
}

// errInputAsked is the failure of a result that asks for input (MRTR) of a
// session offered no capability to give it.
func errInputAsked(resultType string) error {
	return fmt.Errorf("tools/call answered resultType %q on a session offered no capability", failure.ClipName(resultType))
}

// mayHaveResultType reports whether result holds "resulttype" in any case
// (encoding/json matches keys without regard to case). A key written with
// escapes is decoded by go-sdk's reading (NeedsInput) and not here: any
// other value than input_required is then complete to colibri, as it is to
// go-sdk's client.
func mayHaveResultType(result []byte) bool {
	const word = "resulttype"
	for i := bytes.IndexAny(result, "rR"); i >= 0 && i+len(word) <= len(result); {
		if bytes.EqualFold(result[i:i+len(word)], []byte(word)) {
			return true
		}
		j := bytes.IndexAny(result[i+1:], "rR")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}
