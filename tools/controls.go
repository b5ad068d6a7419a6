package tools

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/metrics"
	"github.com/colibri-mcp/colibri-mcp/tools/answer"
	"github.com/colibri-mcp/colibri-mcp/tools/record"
)

// controls is the outermost receiving middleware of colibri's own server
// (docs/operations.md: audit log, request ids). Every request gets an id in its
// context, which every log line about it carries; every call of a hosted
// tool gets one audit line and is counted, whatever becomes of it (the
// gate's refusal, a denial, invalid input, an unknown server, a failure, a
// cancellation), written before the answer is returned; every request is
// timed.
func (s *Service) controls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		return s.control(ctx, method, req, next)
	}
}

func (s *Service) control(ctx context.Context, method string, req mcp.Request, handle mcp.MethodHandler) (mcp.Result, error) {
	ctx = withAdmission(reqctx.WithID(ctx, reqctx.NewID()))
	start := time.Now()
	// A call of a hosted tool is recorded (with an audit log or metrics);
	// call_tool's is named by its input (byInput), once its handler read it.
	var call *record.Call
	var byInput bool
	if s.opts.Audit != nil || s.opts.Metrics != nil {
		call, byInput = s.hostedCallOf(method, req)
	}
	if call != nil {
		ctx = record.WithNote(ctx, call.Note)
	}
	// The call's large strings stay until its audit line is written.
	ctx, leave, handle := s.joinBulk(ctx, method, req, handle)
	defer leave()
	res, err := handle(ctx, method, req)
	took := time.Since(start)
	if byInput {
		s.name(call, req)
	}
	if call != nil {
		var detail *ErrorDetail
		r, _ := res.(*mcp.CallToolResult)
		if r != nil {
			detail = answer.Of(r)
		} else if err != nil {
			detail = &ErrorDetail{Kind: failure.KindInternal}
		}
		s.rec.Finish(ctx, call, req.GetSession(), r, detail, start, took)
	}
	s.opts.Metrics.ServerOperation(method, took, serverErrorType(res, err))
	return s.plainError(method, req, res), err
}

// plainError is res less its structuredContent when res is colibri's own
// failure of a call that its caller may check against an outputSchema
// (Catalog.OutputChecked): the text "colibri: KIND: …" says the same. The
// audit line and metrics have read the kind by then (control).
func (s *Service) plainError(method string, req mcp.Request, res mcp.Result) mcp.Result {
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil || method != "tools/call" || answer.Of(r) == nil {
		return res
	}
	p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
	if !ok || !s.cat.OutputChecked(p.Name) {
		return res
	}
	plain := *r
	plain.StructuredContent = nil
	return &plain
}

// hostedCallOf recognizes a call of a hosted tool among the requests
// colibri receives: call_tool, whose input names the server and tool
// (byInput: named once the handler has read it, name), and in aggregate
// mode a tool whose exposed name routes to a hosted one.
func (s *Service) hostedCallOf(method string, req mcp.Request) (call *record.Call, byInput bool) {
	if method != "tools/call" {
		return nil, false
	}
	p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
	if !ok {
		return nil, false
	}
	if ref, ok := s.cat.Route(p.Name); ok {
		return &record.Call{Server: ref.Server, Tool: ref.Tool, ExposedName: p.Name, Args: p.Arguments, Note: &record.Note{}}, false
	}
	if p.Name != CallToolTool {
		return nil, false
	}
	return &record.Call{Note: &record.Note{}}, true
}

// name fills in the server, tool and arguments of a call_tool call, for
// its record: what its handler read of its input (record.Note.Named, the
// input's one decode), or, for a call refused before its handler ran
// (joinBulk), its input read here, leniently.
func (s *Service) name(call *record.Call, req mcp.Request) {
	if server, tool, args, ok := call.Named(); ok {
		call.Server, call.Tool, call.Args = server, tool, args
		return
	}
	var in struct {
		Server    string          `json:"server"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(req.GetParams().(*mcp.CallToolParamsRaw).Arguments, &in)
	call.Server, call.Tool, call.Args = s.nameOf(in.Server), s.nameOf(in.Name), in.Arguments
}

// nameOf is a name in call_tool's input as its caller sent it: a large one
// was lifted, and is read back from the table. One whose string is gone (a
// call refused for beginning after its HTTP POST had ended) is unknown, "":
// never the reference that stood for it, whose marker is colibri's secret.
func (s *Service) nameOf(name string) string {
	if v, ok := s.opts.Bulk.Value(name); ok {
		return v
	}
	if s.opts.Bulk.IsRef(name) {
		return ""
	}
	return name
}

// Call is CallTool for callers other than an MCP session (the command
// line): the call is audited and counted as a session's call is.
func (s *Service) Call(ctx context.Context, server, name string, args json.RawMessage, caller *session.Caller) (*mcp.CallToolResult, error) {
	if reqctx.ID(ctx) == "" {
		ctx = reqctx.WithID(ctx, reqctx.NewID())
	}
	ctx = withAdmission(ctx)
	call := &record.Call{Server: server, Tool: name, Args: args, Note: &record.Note{}}
	ctx = record.WithNote(ctx, call.Note)
	start := time.Now()
	res, err := s.CallTool(ctx, server, name, args, caller)
	var detail *ErrorDetail
	if err != nil {
		detail = Detail(err)
	}
	s.rec.Finish(ctx, call, nil, res, detail, start, time.Since(start))
	return res, err
}

// labels are a call's server and tool as metric labels: names from the
// registry and from the hosted server's own list, anything else
// metrics.Other, so that a caller cannot grow the series with names it
// makes up.
func (s *Service) labels(ctx context.Context, server, tool string) (string, string) {
	reg, err := s.registry(ctx)
	if err != nil || reg.Servers[server] == nil {
		return metrics.Other, metrics.Other
	}
	if toolNamed(s.opts.Host.KnownTools(reg.Servers[server]), tool) == nil {
		return server, metrics.Other
	}
	return server, tool
}

// serverErrorType says how a request a caller sent colibri failed, for
// mcp_server_operation_duration_seconds: "" when it succeeded, colibri's
// error kind for a call colibri failed, "tool_error" for a hosted tool's
// isError, the JSON-RPC code for an error answer.
func serverErrorType(res mcp.Result, err error) string {
	if err != nil {
		if rpcErr, ok := err.(*jsonrpc.Error); ok {
			return strconv.FormatInt(rpcErr.Code, 10)
		}
		return metrics.Other
	}
	r, ok := res.(*mcp.CallToolResult)
	if !ok || !r.IsError {
		return ""
	}
	if d := answer.Of(r); d != nil {
		return string(d.Kind)
	}
	return "tool_error"
}
