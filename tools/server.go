package tools

//lint:file-ignore SA1019 colibri relays sampling, roots and logging between a caller and a hosted server on purpose: both sides still speak the protocol versions that have them (deprecated, not removed, in 2026-07-28).

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools/answer"
	"github.com/colibri-mcp/colibri-mcp/tools/caller"
	"github.com/colibri-mcp/colibri-mcp/tools/input"
	"github.com/colibri-mcp/colibri-mcp/tools/record"
)

// NewServer returns colibri's MCP server: the three tools, described from
// the registry as it is now, and in aggregate mode every hosted tool too;
// both kept current (tools/catalog), with notifications/tools/list_changed.
func (s *Service) NewServer(version string) *mcp.Server {
	instructions := "colibri-mcp hosts other MCP servers. Use " + ServersTool + " to see them, " + ListToolsTool +
		" with a server to see its tools, and " + CallToolTool + " to call one."
	if s.opts.Aggregate {
		instructions += " Each hosted tool is also offered directly, named PREFIX__TOOL."
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "colibri-mcp", Title: "colibri-mcp", Version: version}, &mcp.ServerOptions{
		Logger:       s.log,
		Instructions: instructions,
		GetSessionID: s.sessionID,
		Capabilities: &mcp.ServerCapabilities{
			Logging: &mcp.LoggingCapabilities{}, // hosted servers' logs are forwarded
			// The tools' descriptions follow the registry, and in aggregate
			// mode the tools follow the hosted lists.
			Tools: &mcp.ToolCapabilities{ListChanged: true},
			// Aggregate mode serves MCP Apps' ui:// resources (resources.go).
			Resources: resourcesCapability(s.opts.Aggregate),
		},
		// 2026-07-28's lists say who may cache them: in aggregate mode
		// tools/list depends on the caller's principal (its own policy
		// rules narrow the hosted tools), so only its own client may.
		SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			if _, ok := req.(*mcp.ListToolsRequest); ok && s.opts.Aggregate {
				c.CacheScope = "private"
			}
		},
	})
	server.AddReceivingMiddleware(s.receiving(server)...)
	s.cat.Attach(server)
	return server
}

// receiving is every receiving middleware of colibri's own server, in one
// ordered list, outermost first (go-sdk's AddReceivingMiddleware order):
//
//  1. the registry is looked at (one stat), so that the call and the record
//     of it meet the same tools;
//  2. request ids, the audit log and metrics (controls.go) see every
//     request, refusals included; inside them, a call holds its request,
//     which owns the large strings lifted from its arguments and from its
//     hosted answer (internal/bulk), until it has returned, its audit line
//     is written and its context has ended (go-sdk ends it only after the
//     answer is written). A call whose strings were let go before it began
//     does not run (joinBulk);
//  3. a list's cursors are sealed as this instance's and opened again
//     (cursor.go), so that the catalog and go-sdk read go-sdk's own;
//  4. the catalog's part: a tools/list waits for the hosted lists being
//     read and is narrowed to what the caller may see, aggregate mode
//     serves ui:// resources and answers a call by the name of a tool the
//     pins withdrew (tool_changed, which go-sdk, no longer knowing the
//     name, would answer "unknown tool"), and each caller's logging level
//     is kept to pass on to hosted servers.
func (s *Service) receiving(server *mcp.Server) []mcp.Middleware {
	refresh := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" || method == "tools/call" {
				s.cat.Refresh()
			}
			return next(ctx, method, req)
		}
	}
	offer := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				s.cat.RetryDue()
				s.cat.Settle(ctx)
			}
			if r, ok := req.(*mcp.CallToolRequest); ok && s.opts.Aggregate && r.Params != nil {
				if _, withdrawn := s.cat.Withdrawn(r.Params.Name); withdrawn {
					// go-sdk no longer knows the name (the pins hid the
					// tool): answered here, tool_changed, not unknown tool.
					return s.handleHosted(ctx, r)
				}
			}
			if r, ok := req.(*mcp.ReadResourceRequest); ok && s.opts.Aggregate {
				res, err := s.readUI(ctx, r)
				if err != nil {
					return nil, err
				}
				return res, nil
			}
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				s.cat.VisibleTo(ctx, r) // a caller's own policy narrows the hosted tools offered
			}
			if method == "logging/setLevel" && err == nil {
				if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok {
					s.levels.Set(server, req.GetSession().(*mcp.ServerSession), p.Level)
				}
			}
			return res, err
		}
	}
	return []mcp.Middleware{refresh, s.controls, s.sealCursors, offer}
}

// joinBulk has a call hold its request's large strings (bulk.Table.Join)
// until it has returned and its context has ended: controls runs it, so
// that the hold spans the call's audit line (a cancelled call's context
// ends before it returns, and its line digests the arguments it was sent).
// leave lets go of the call's hold. A call that begins after its request
// was let go (its HTTP caller gone before the call began) finds its strings
// released, and handle is then a refusal: the call fails without running,
// since what it would forward is gone.
func (s *Service) joinBulk(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (_ context.Context, leave func(), handle mcp.MethodHandler) {
	p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
	if s.opts.Bulk == nil || method != "tools/call" || !ok {
		return ctx, func() {}, next
	}
	ctx, leave, err := s.opts.Bulk.Join(ctx, p.Arguments)
	if err != nil {
		return ctx, leave, func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
			s.log.InfoContext(ctx, "a call began after its caller had gone; its large strings are gone, so it does not run")
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "colibri: the request ended before its call began"}
		}
	}
	return ctx, leave, next
}

// ownHandler is the handler of one of colibri's three tools.
func (s *Service) ownHandler(name string) mcp.ToolHandler {
	switch name {
	case ServersTool:
		return s.handleServers
	case ListToolsTool:
		return s.handleListTools
	}
	return s.handleCallTool
}

func (s *Service) handleServers(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct{}
	if err := input.Own(s.opts.Bulk, ServersTool, req.Params.Arguments, &in); err != nil {
		return s.errorResult(err), nil
	}
	out, err := s.Servers(ctx)
	if err != nil {
		return s.errorResult(err), nil
	}
	return answer.Structured(out), nil
}

func (s *Service) handleListTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in ListToolsInput
	if err := input.Own(s.opts.Bulk, ListToolsTool, req.Params.Arguments, &in); err != nil {
		return s.errorResult(err), nil
	}
	if in.Query != "" {
		found, err := s.SearchTools(ctx, in)
		if err != nil {
			return s.errorResult(err), nil
		}
		return answer.Structured(found), nil
	}
	out, err := s.ListTools(ctx, in, caller.Of(ctx, req, s.levels.Get(req.Session)))
	if err != nil {
		return s.errorResult(err), nil
	}
	return answer.Structured(out), nil
}

func (s *Service) handleCallTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in input.CallTool
	err := input.Own(s.opts.Bulk, CallToolTool, req.Params.Arguments, &in)
	// The record names what the input names, invalid or not (input.CallTool).
	record.NoteOf(ctx).Named(s.nameOf(in.Server), s.nameOf(in.Name), in.Arguments)
	if err != nil {
		return s.errorResult(err), nil
	}
	return s.answerCall(ctx, req, toolCall{Server: in.Server, Tool: in.Name, Arguments: in.Arguments})
}

// handleHosted answers a call of an exposed hosted tool: the name is
// looked up in the catalog's routing table, never taken apart, and the call
// goes the way of colibri_external_mcp_call_tool.
func (s *Service) handleHosted(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ref, ok := s.cat.Route(req.Params.Name)
	if !ok {
		if ref, ok = s.cat.Withdrawn(req.Params.Name); !ok {
			return s.errorResult(unexposed(req.Params.Name)), nil
		}
		// Hidden because it changed since pinned: the call's own pin
		// check says so (tool_changed and the pins diff to run), or, if
		// the change was accepted meanwhile, makes the call.
	}
	return s.answerCall(ctx, req, toolCall{Server: ref.Server, Tool: ref.Tool, Arguments: req.Params.Arguments, Exposed: req.Params.Name})
}

// toolCall is one call of a hosted tool, however the caller named it.
type toolCall struct {
	Server, Tool string
	Arguments    json.RawMessage // the hosted tool's arguments, as sent
	Exposed      string          // the aggregate name it was called by, or ""
}

// answerCall is the one path of every call of a hosted tool, by
// colibri_external_mcp_call_tool and by an aggregate tool alike: the gate,
// the registry, the arguments' checks, progress, cancellation, error kinds
// and retries are all CallTool's, so that the two ways cannot drift apart.
// A 2026-07-28 caller's call is answered a round at a time when the
// hosted server asks for its input (tools/caller's Rounds); the only
// error is a requestState refused.
func (s *Service) answerCall(ctx context.Context, req *mcp.CallToolRequest, c toolCall) (*mcp.CallToolResult, error) {
	if !caller.Modern(req) {
		return s.callOnce(ctx, req, c), nil
	}
	res, err := s.rounds.Run(ctx, caller.Call{Principal: reqctx.Principal(ctx), Server: c.Server, Method: "tools/call",
		Params: req.Params, Timeout: s.callTimeout(c.Server), Caller: caller.Of(ctx, req, s.levels.Get(req.Session))},
		func(ctx context.Context) (mcp.Result, error) { return s.callOnce(ctx, req, c), nil })
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr):
		return nil, rpcErr
	case err != nil:
		return s.errorResult(err), nil
	}
	return res.(*mcp.CallToolResult), nil
}

// callOnce makes the call, its failures as colibri's isError results.
func (s *Service) callOnce(ctx context.Context, req *mcp.CallToolRequest, c toolCall) *mcp.CallToolResult {
	res, err := s.CallTool(ctx, c.Server, c.Tool, c.Arguments, caller.Of(ctx, req, s.levels.Get(req.Session)))
	if err != nil {
		if failure.KindOf(err) == failure.KindCancelled {
			// Over stdio this result is never sent (internal/stdioserve):
			// the caller cancelled the request and expects no response.
			s.log.DebugContext(ctx, "call cancelled", "server", c.Server, "tool", c.Tool, "exposed_name", c.Exposed)
		}
		return s.errorResult(err)
	}
	return res
}

// callTimeout is how long a call of server may run once sent: how long its
// continuation waits for a 2026-07-28 caller's input.
func (s *Service) callTimeout(server string) time.Duration {
	reg, err := s.opts.Registry()
	if err == nil && reg.Servers[server] != nil {
		return s.opts.Host.CallTimeout(reg.Servers[server])
	}
	return s.opts.Host.CallTimeout(&registry.Server{})
}

// unexposed is the failure of a call by an aggregate name that is no longer
// offered (the registry or the hosted list changed since the caller
// listed).
func unexposed(name string) error {
	return &failure.Error{Kind: failure.KindUnknownTool, Tool: name, Phase: failure.PhaseList,
		Err:  errors.New("no hosted tool is exposed under this name any more"),
		Hint: "list the tools again: the registry or the hosted server's tools changed"}
}

// ErrorResult is a colibri failure as the contract shapes it (answer.Error).
func ErrorResult(err error) *mcp.CallToolResult { return answer.Error(err) }

// sessionID is a new HTTP session's id: the instance's name, a dot and 26
// random characters (crypto/rand's Text, go-sdk's own default), or those
// alone without an instance.
func (s *Service) sessionID() string {
	if s.opts.Instance == "" {
		return rand.Text()
	}
	return s.opts.Instance + "." + rand.Text()
}
