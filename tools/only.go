package tools

//lint:file-ignore SA1019 serve --only relays logging between a caller and a hosted server on purpose: both sides still speak the protocol versions that have it (deprecated, not removed, in 2026-07-28).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/policy"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools/answer"
	"github.com/colibri-mcp/colibri-mcp/tools/caller"
	"github.com/colibri-mcp/colibri-mcp/tools/record"
)

// serve --only NAME (docs/protocol.md, "One server, fully"): one hosted
// server offered as colibri's own MCP server, under its own names, with its
// instructions and capabilities, every request of it passed through
// colibri's host (confinement, environment, timeouts, process slots) and
// its controls (the call gate on tools/call, the policy's tools, prompts
// and resources rules, pins, schema checks, audit, metrics).
//
// go-sdk's server keeps the session with the caller (initialize, ping,
// logging/setLevel, the subscriptions it books); a receiving middleware
// answers every request of a feature by asking the hosted server, so that
// a per_request server is started for each one and a list is always the
// server's own, screened for this caller.

// onlyPages bounds the pages of one hosted list colibri reads whole (its
// prompts, resources or templates): a server handing out cursors forever
// must not keep colibri listing.
const onlyPages = 100

// only is the state of serve --only.
type only struct {
	s      *Service
	name   string
	caps   *mcp.ServerCapabilities // what colibri offers, as the server declared it
	server *mcp.Server
	// notes carries the hosted server's notifications to the caller,
	// off the goroutine that reads the server, bounded.
	notes chan func()

	mu sync.Mutex
	// who is the principal of each caller's session (what partition its
	// hosted sessions are: callerOf), learnt from its requests.
	who map[*mcp.ServerSession]string
	// subs counts, for each partition's warm process and URI, the caller
	// sessions subscribed: the hosted subscription is made by the first
	// and ended by the last.
	subs map[subKey]map[*mcp.ServerSession]bool
}

type subKey struct{ part, uri string }

// maxSubscriptions bounds the URIs one partition (a principal) keeps
// subscribed on its hosted server: past it, resources/subscribe is refused.
const maxSubscriptions = 1024

// onlyNotes bounds the notifications waiting for a caller slow to read:
// past it they are dropped (a list_changed comes again with the next
// change; a log line is lost).
const onlyNotes = 256

// NewOnlyServer returns the MCP server of serve --only name: the hosted
// server is started (or its warm session opened) once, to learn what it
// declares; everything else is asked of it request by request. version is
// colibri's, logged; the caller is told the hosted server's own
// serverInfo.
func (s *Service) NewOnlyServer(ctx context.Context, name, version string) (*mcp.Server, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	srv, err := lookup(reg, name)
	if err != nil {
		return nil, err
	}
	var init *mcp.InitializeResult
	err = s.opts.Host.Request(ctx, srv, nil, func(_ context.Context, sess *session.Session) error {
		init = sess.InitializeResult()
		return nil
	})
	if err != nil {
		return nil, err
	}
	o := &only{s: s, name: name, caps: offered(init.Capabilities), notes: make(chan func(), onlyNotes),
		who: map[*mcp.ServerSession]string{}, subs: map[subKey]map[*mcp.ServerSession]bool{}}
	instructions, err := o.pinnedInstructions(ctx, srv, init.Instructions)
	if err != nil {
		return nil, err
	}
	impl := &mcp.Implementation{Name: name, Version: version}
	if si := init.ServerInfo; si != nil {
		impl = &mcp.Implementation{Name: si.Name, Title: si.Title, Version: si.Version, WebsiteURL: si.WebsiteURL}
	}
	opts := &mcp.ServerOptions{
		Logger:       s.log,
		Instructions: instructions,
		Capabilities: o.caps,
	}
	if r := o.caps.Resources; r != nil && r.Subscribe {
		opts.SubscribeHandler = o.subscribe
		opts.UnsubscribeHandler = o.unsubscribe
	}
	if o.caps.Completions != nil {
		opts.CompletionHandler = o.complete
	}
	o.server = mcp.NewServer(impl, opts)
	o.server.AddReceivingMiddleware(o.control, o.dispatch)
	s.opts.Host.WatchNotifications(o.notified)
	go o.deliver(ctx)
	s.log.Info("serving one hosted server as colibri's own", "server", name, "colibri_version", version,
		"hosted", impl.Name, "hosted_version", impl.Version, "protocol", init.ProtocolVersion)
	return o.server, nil
}

// offered is what colibri declares of the hosted server's capabilities: its
// tools, prompts, resources, completions and logging as it declares them;
// never tasks (go-sdk relays none) nor anything experimental or unknown to
// colibri, which it could not relay.
func offered(c *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	out := &mcp.ServerCapabilities{}
	if c == nil {
		return out
	}
	if c.Tools != nil {
		out.Tools = &mcp.ToolCapabilities{ListChanged: c.Tools.ListChanged}
	}
	if c.Prompts != nil {
		out.Prompts = &mcp.PromptCapabilities{ListChanged: c.Prompts.ListChanged}
	}
	if c.Resources != nil {
		out.Resources = &mcp.ResourceCapabilities{ListChanged: c.Resources.ListChanged, Subscribe: c.Resources.Subscribe}
	}
	if c.Completions != nil {
		out.Completions = &mcp.CompletionCapabilities{}
	}
	if c.Logging != nil {
		out.Logging = &mcp.LoggingCapabilities{}
	}
	return out
}

// entry is the registry a request runs under and the entry served: one
// removed or made invalid since colibri started fails every request
// (config), naming it.
func (o *only) entry() (*registry.Registry, *registry.Server, error) {
	reg, err := o.s.admit()
	if err != nil {
		return nil, nil, err
	}
	srv := reg.Servers[o.name]
	if srv == nil {
		return nil, nil, &failure.Error{Kind: failure.KindConfig, Server: o.name,
			Err:  fmt.Errorf("%s no longer has the server %q that serve --only offers", orDefault(reg.Path, "the registry"), o.name),
			Hint: "put the entry back, or run colibri-mcp serve --only with a server the registry has"}
	}
	return reg, srv, nil
}

// callerOf describes the caller of req to the host. Every request of a
// caller offers the hosted server that caller's capabilities, lists
// included, so that a persistent server's requests all reach the one warm
// process kept for them (the host keeps one per capability set): a
// subscription made by one request is the process's that another's call
// toggles. Its log is relayed apart (notified), under the hosted server's
// own logger names.
func (o *only) callerOf(ctx context.Context, ss *mcp.ServerSession, p mcp.Params) *session.Caller {
	var meta map[string]any
	var token any
	if p != nil && !reflect.ValueOf(p).IsNil() { // a request may come without params: a nil pointer in p
		meta = p.GetMeta()
		if t, ok := p.(interface{ GetProgressToken() any }); ok {
			token = t.GetProgressToken()
		}
	}
	c := caller.For(ctx, ss, meta, token, o.s.levels.Get(ss))
	c.Log = nil
	c.Partition = reqctx.Principal(ctx)
	return c
}

// control is serve --only's outermost middleware: a request id for every
// request, metrics for every request, and for tools/call the hold of its
// large strings (joinBulk) until its audit line is written.
func (o *only) control(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx = reqctx.WithID(ctx, reqctx.NewID())
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			o.learn(ss, reqctx.Principal(ctx))
		}
		start := time.Now()
		ctx, leave, handle := o.s.joinBulk(ctx, method, req, next)
		defer leave()
		res, err := handle(ctx, method, req)
		o.s.opts.Metrics.ServerOperation(method, time.Since(start), serverErrorType(res, err))
		return res, err
	}
}

// dispatch answers the requests of the hosted server's features by asking
// it; what go-sdk answers itself (initialize, ping, logging/setLevel,
// subscriptions' bookkeeping) goes on.
func (o *only) dispatch(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.ListToolsRequest:
			if o.caps.Tools != nil {
				return o.listTools(ctx, r)
			}
		case *mcp.CallToolRequest:
			if o.caps.Tools != nil {
				return o.callTool(ctx, r), nil
			}
		case *mcp.ListPromptsRequest:
			if o.caps.Prompts != nil {
				return o.listPrompts(ctx, r)
			}
		case *mcp.GetPromptRequest:
			if o.caps.Prompts != nil {
				return o.getPrompt(ctx, r)
			}
		case *mcp.ListResourcesRequest:
			if o.caps.Resources != nil {
				return o.listResources(ctx, r)
			}
		case *mcp.ListResourceTemplatesRequest:
			if o.caps.Resources != nil {
				return o.listTemplates(ctx, r)
			}
		case *mcp.ReadResourceRequest:
			if o.caps.Resources != nil {
				return o.readResource(ctx, r)
			}
		}
		res, err := next(ctx, method, req)
		if r, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams]); ok && err == nil {
			o.setLevel(ctx, r)
		}
		return res, err
	}
}

// ask runs one request of the hosted server, do, on a session of srv for
// c. The server's own error answer (a prompt it does not have) is returned
// as it is, and leaves the session as a success does.
func ask[R any](o *only, ctx context.Context, srv *registry.Server, c *session.Caller, method string, do func(context.Context, *mcp.ClientSession) (R, error)) (R, error) {
	var res R
	var answered *jsonrpc.Error
	err := o.s.opts.Host.Request(ctx, srv, c, func(ctx context.Context, sess *session.Session) error {
		var err error
		res, err = session.Request(ctx, sess, c, method, do)
		if errors.As(err, &answered) {
			return nil
		}
		return err
	})
	if err != nil {
		return res, o.failed(ctx, err)
	}
	if answered != nil {
		return res, answered
	}
	return res, nil
}

// JSON-RPC errors of colibri's own for what is not a tool call (a tool
// call's failure is its isError result): codeRefused (−32010) when the
// gate, the policy or the pins refuse, codeFailed (−32011) when colibri
// could not get the answer. data.colibri_error carries the kind, as a
// tool call's structuredContent does.
func (o *only) failed(ctx context.Context, err error) error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return rpcErr
	}
	d := o.s.detail(err)
	code := int64(codeFailed)
	switch d.Kind {
	case failure.KindCallDisabled, failure.KindDenied, failure.KindToolChanged:
		code = codeRefused
	}
	data, _ := json.Marshal(map[string]any{"colibri_error": d})
	o.s.log.DebugContext(ctx, "serve --only refused or failed a request", "server", o.name, "kind", d.Kind, "err", err)
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf("colibri: %s: %s", d.Kind, d.Message), Data: data}
}

// deniedBy is the failure of a request the policy refuses: its message
// names what was refused, never the rule (the log says which).
func (o *only) deniedBy(ctx context.Context, what string, d policy.Decision) error {
	o.s.log.DebugContext(ctx, "policy denied a request", "server", o.name, "what", what, "principal", reqctx.Principal(ctx), "rule", d.Rule)
	return &failure.Error{Kind: failure.KindDenied, Server: o.name,
		Err: fmt.Errorf("policy denies %s on %s for this caller", what, o.name)}
}

func (o *only) listTools(ctx context.Context, r *mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	reg, srv, err := o.entry()
	if err != nil {
		return nil, o.failed(ctx, err)
	}
	// Listed with the caller's capabilities, as the server would list to
	// it directly (a server may offer a tool that asks for roots only to a
	// client that has them); pinned for that capability set.
	c := o.callerOf(ctx, r.Session, r.Params)
	tools, err := o.s.opts.Host.ListToolsFor(ctx, srv, c)
	if err != nil {
		return nil, o.failed(ctx, err)
	}
	kept, _, err := o.s.screenFor(ctx, reg, srv, capsOf(c), tools)
	if err != nil {
		return nil, o.failed(ctx, err)
	}
	return &mcp.ListToolsResult{Tools: nonNil(kept)}, nil
}

// callTool is call_tool's path with the hosted tool's own name: the gate,
// the policy, the pins, the schema check, retries, progress, cancellation
// and the audit line are all CallTool's and the recorder's.
func (o *only) callTool(ctx context.Context, r *mcp.CallToolRequest) *mcp.CallToolResult {
	call := &record.Call{Server: o.name, Tool: r.Params.Name, Args: r.Params.Arguments, Note: &record.Note{}}
	ctx = record.WithNote(ctx, call.Note)
	start := time.Now()
	res, err := o.callHosted(ctx, r)
	if err != nil {
		if failure.KindOf(err) == failure.KindCancelled {
			o.s.log.DebugContext(ctx, "call cancelled", "server", o.name, "tool", r.Params.Name)
		}
		res = o.s.errorResult(err)
	}
	o.s.rec.Finish(ctx, call, r.Session, res, answer.Of(res), start, time.Since(start))
	return res
}

func (o *only) callHosted(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if _, _, err := o.entry(); err != nil {
		return nil, err
	}
	return o.s.CallTool(ctx, o.name, r.Params.Name, r.Params.Arguments, o.callerOf(ctx, r.Session, r.Params))
}

// pages reads every page of a hosted list, at most onlyPages.
func pages[T any](ctx context.Context, method string, list func(ctx context.Context, cursor string) ([]T, string, error)) ([]T, error) {
	out := []T{}
	cursor := ""
	for n := 1; ; n++ {
		items, next, err := list(ctx, cursor)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if next == "" {
			return out, nil
		}
		if n >= onlyPages {
			return nil, &failure.Error{Kind: failure.KindTooLarge, Phase: failure.Phase(method),
				Err: fmt.Errorf("the server's %s passed %d pages", method, onlyPages)}
		}
		cursor = next
	}
}

func (o *only) listPrompts(ctx context.Context, r *mcp.ListPromptsRequest) (*mcp.ListPromptsResult, error) {
	reg, srv, err := o.entry()
	if err != nil {
		return nil, o.failed(ctx, err)
	}
	c := o.callerOf(ctx, r.Session, r.Params)
	all, err := ask(o, ctx, srv, c, "prompts/list", listAllPrompts)
	if err != nil {
		return nil, err
	}
	pins, err := o.pinList(ctx, reg, srv, pin.KindPrompt, capsOf(c), func(st *pin.Store) (pin.Verdict, error) {
		return st.CheckPrompts(srv.Name, capsOf(c), all)
	})
	if err != nil {
		return nil, o.failed(ctx, err)
	}
	rules, who := reg.Rules(srv), reqctx.Principal(ctx)
	kept := make([]*mcp.Prompt, 0, len(all))
	for _, p := range all {
		if p != nil && policy.DecidePrompt(rules, p.Name, who).Allow && !pins.hides(p.Name) {
			kept = append(kept, p)
		}
	}
	return &mcp.ListPromptsResult{Prompts: kept}, nil
}

func (o *only) getPrompt(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	call := &record.Call{Server: o.name, Tool: "prompt:" + r.Params.Name, Note: &record.Note{}}
	ctx = record.WithNote(ctx, call.Note)
	start := time.Now()
	res, err := o.getHostedPrompt(ctx, r)
	o.finish(ctx, call, r.Session, err, start)
	return res, err
}

func (o *only) getHostedPrompt(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	reg, srv, err := o.entry()
	if err != nil {
		return nil, o.failed(ctx, err)
	}
	d := policy.DecidePrompt(reg.Rules(srv), r.Params.Name, reqctx.Principal(ctx))
	record.NoteOf(ctx).Decided(d)
	if !d.Allow {
		return nil, o.failed(ctx, o.deniedBy(ctx, "the prompt "+r.Params.Name, d))
	}
	params := &mcp.GetPromptParams{Name: r.Params.Name, Arguments: r.Params.Arguments}
	c := o.callerOf(ctx, r.Session, r.Params)
	params.Meta = c.Meta
	pinning := o.s.pinning(reg, srv)
	return ask(o, ctx, srv, c, "prompts/get", func(ctx context.Context, cs *mcp.ClientSession) (*mcp.GetPromptResult, error) {
		if pinning {
			// The prompt as the server lists it now, against its pin:
			// nothing is sent for one that changed.
			all, err := listAllPrompts(ctx, cs)
			if err != nil {
				return nil, err
			}
			pins, err := o.pinList(ctx, reg, srv, pin.KindPrompt, capsOf(c), func(st *pin.Store) (pin.Verdict, error) {
				return st.CheckPrompts(srv.Name, capsOf(c), all)
			})
			if err != nil {
				return nil, err
			}
			if pins.hides(params.Name) {
				return nil, definitionChanged(ctx, srv.Name, pin.KindPrompt, params.Name, pins.changed[params.Name], pins.locked)
			}
		}
		res, err := cs.GetPrompt(ctx, params)
		if err == nil && pinning && reg.PinScanMode(srv) != registry.ScanOff {
			o.scanMessages(ctx, srv, params.Name, res)
		}
		return res, err
	})
}

// scanMessages reads a prompts/get's messages for the signs of tool
// poisoning (docs/security.md): they are made anew at each get, so there
// is no pin to hold them to; what the scan finds is logged at warn and
// audited ("pin": "flagged").
func (o *only) scanMessages(ctx context.Context, srv *registry.Server, name string, res *mcp.GetPromptResult) {
	if res == nil {
		return
	}
	var found []pin.Flag
	for i, m := range res.Messages {
		if m == nil {
			continue
		}
		if t, ok := m.Content.(*mcp.TextContent); ok {
			found = append(found, pin.ScanText(fmt.Sprintf("messages/%d/content/text", i), t.Text)...)
		}
	}
	if len(found) == 0 {
		return
	}
	record.NoteOf(ctx).Pinned("flagged")
	for _, f := range found {
		o.s.log.WarnContext(ctx, "the pin scan flagged a prompt's message", "server", srv.Name, "prompt", name, "flag", f.Flag, "where", f.Where, "text", f.Text)
	}
}

// finish writes the audit line of a prompts/get or resources/read, as a
// call's is written (tool: "prompt:NAME", or the URI).
func (o *only) finish(ctx context.Context, call *record.Call, ss mcp.Session, err error, start time.Time) {
	var detail *ErrorDetail
	if err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			var data struct {
				E *ErrorDetail `json:"colibri_error"`
			}
			if json.Unmarshal(rpcErr.Data, &data) == nil && data.E != nil {
				detail = data.E
			}
		}
	}
	res := (*mcp.CallToolResult)(nil)
	if err != nil && detail == nil {
		// The hosted server's own error answer: its failure, as a tool's isError is.
		res = &mcp.CallToolResult{IsError: true}
	}
	o.s.rec.Finish(ctx, call, ss, res, detail, start, time.Since(start))
}

func (o *only) listResources(ctx context.Context, r *mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	reg, srv, err := o.entry()
	if err != nil {
		return nil, o.failed(ctx, err)
	}
	c := o.callerOf(ctx, r.Session, r.Params)
	all, err := ask(o, ctx, srv, c, "resources/list", listAllResources)
	if err != nil {
		return nil, err
	}
	pins, err := o.pinList(ctx, reg, srv, pin.KindResource, capsOf(c), func(st *pin.Store) (pin.Verdict, error) {
		return st.CheckResources(srv.Name, capsOf(c), all)
	})
	if err != nil {
		return nil, o.failed(ctx, err)
	}
	rules, who := reg.Rules(srv), reqctx.Principal(ctx)
	kept := make([]*mcp.Resource, 0, len(all))
	for _, res := range all {
		if res != nil && policy.DecideResource(rules, res.URI, who).Allow && !pins.hides(res.URI) {
			kept = append(kept, res)
		}
	}
	return &mcp.ListResourcesResult{Resources: kept}, nil
}

func (o *only) listTemplates(ctx context.Context, r *mcp.ListResourceTemplatesRequest) (*mcp.ListResourceTemplatesResult, error) {
	reg, srv, err := o.entry()
	if err != nil {
		return nil, o.failed(ctx, err)
	}
	c := o.callerOf(ctx, r.Session, r.Params)
	all, err := ask(o, ctx, srv, c, "resources/templates/list", listAllTemplates)
	if err != nil {
		return nil, err
	}
	pins, err := o.pinList(ctx, reg, srv, pin.KindTemplate, capsOf(c), func(st *pin.Store) (pin.Verdict, error) {
		return st.CheckTemplates(srv.Name, capsOf(c), all)
	})
	if err != nil {
		return nil, o.failed(ctx, err)
	}
	rules, who := reg.Rules(srv), reqctx.Principal(ctx)
	kept := make([]*mcp.ResourceTemplate, 0, len(all))
	for _, t := range all {
		if t != nil && policy.DecideTemplate(rules, t.URITemplate, who).Allow && !pins.hides(t.URITemplate) {
			kept = append(kept, t)
		}
	}
	return &mcp.ListResourceTemplatesResult{ResourceTemplates: kept}, nil
}

func (o *only) readResource(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	call := &record.Call{Server: o.name, Tool: r.Params.URI, Note: &record.Note{}}
	ctx = record.WithNote(ctx, call.Note)
	start := time.Now()
	res, err := o.readHosted(ctx, r)
	o.finish(ctx, call, r.Session, err, start)
	return res, err
}

func (o *only) readHosted(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	reg, srv, err := o.entry()
	if err != nil {
		return nil, o.failed(ctx, err)
	}
	uri := r.Params.URI
	d := policy.DecideResource(reg.Rules(srv), uri, reqctx.Principal(ctx))
	record.NoteOf(ctx).Decided(d)
	if !d.Allow {
		return nil, o.failed(ctx, o.deniedBy(ctx, "the resource "+uri, d))
	}
	c := o.callerOf(ctx, r.Session, r.Params)
	params := &mcp.ReadResourceParams{URI: uri, Meta: c.Meta}
	pinning := o.s.pinning(reg, srv) && srv.PinResources
	res, err := ask(o, ctx, srv, c, "resources/read", func(ctx context.Context, cs *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
		if pinning {
			all, err := listAllResources(ctx, cs)
			if err != nil {
				return nil, err
			}
			pins, err := o.pinList(ctx, reg, srv, pin.KindResource, capsOf(c), func(st *pin.Store) (pin.Verdict, error) {
				return st.CheckResources(srv.Name, capsOf(c), all)
			})
			if err != nil {
				return nil, err
			}
			if pins.hides(uri) {
				return nil, definitionChanged(ctx, srv.Name, pin.KindResource, uri, pins.changed[uri], pins.locked)
			}
		}
		return cs.ReadResource(ctx, params)
	})
	if err == nil && (res == nil || res.Contents == nil) {
		return nil, &jsonrpc.Error{Code: codeFailed, Message: fmt.Sprintf("colibri: protocol: %s answered resources/read without contents", o.name)}
	}
	return res, err
}

// complete asks the hosted server for completions of a prompt's or a
// template's argument: the policy of that prompt or template decides.
func (o *only) complete(ctx context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	reg, srv, err := o.entry()
	if err != nil {
		return nil, o.failed(ctx, err)
	}
	rules, who := reg.Rules(srv), reqctx.Principal(ctx)
	ref := r.Params.Ref
	var d policy.Decision
	what := ""
	switch ref.Type {
	case "ref/prompt":
		d, what = policy.DecidePrompt(rules, ref.Name, who), "the prompt "+ref.Name
	case "ref/resource":
		d, what = policy.DecideTemplate(rules, ref.URI, who), "the resource "+ref.URI
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown reference type %q", ref.Type)}
	}
	if !d.Allow {
		return nil, o.failed(ctx, o.deniedBy(ctx, what, d))
	}
	c := o.callerOf(ctx, r.Session, r.Params)
	params := *r.Params
	params.Meta = c.Meta
	return ask(o, ctx, srv, c, "completion/complete", func(ctx context.Context, cs *mcp.ClientSession) (*mcp.CompleteResult, error) {
		return cs.Complete(ctx, &params)
	})
}

// subscribe passes resources/subscribe on to the hosted server's warm
// session (go-sdk books the caller's subscription once it returns): a
// per_request server has no session that outlives the request, so it
// could never send the update.
func (o *only) subscribe(ctx context.Context, r *mcp.SubscribeRequest) error {
	reg, srv, err := o.entry()
	if err != nil {
		return o.failed(ctx, err)
	}
	uri := r.Params.URI
	if d := policy.DecideResource(reg.Rules(srv), uri, reqctx.Principal(ctx)); !d.Allow {
		return o.failed(ctx, o.deniedBy(ctx, "the resource "+uri, d))
	}
	if !srv.IsPersistent() {
		return &jsonrpc.Error{Code: codeRefused, Message: fmt.Sprintf(
			"colibri: %s is per_request: each request starts its own process, gone once it answers, so nothing would send this resource's updates; a subscription needs a warm server (\"lifecycle\": \"persistent\")", o.name)}
	}
	c := o.callerOf(ctx, r.Session, r.Params)
	first, err := o.subscribed(subKey{c.Partition, uri}, r.Session)
	if err != nil || !first {
		return err // refused, or already subscribed on this partition's process
	}
	_, err = ask(o, ctx, srv, c, "resources/subscribe", func(ctx context.Context, cs *mcp.ClientSession) (struct{}, error) {
		return struct{}{}, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
	if err != nil {
		o.unsubscribed(subKey{c.Partition, uri}, r.Session)
	}
	return err
}

// subscribed books ss's subscription to k's URI on k's partition, and
// reports whether it is the first (the one to pass on).
func (o *only) subscribed(k subKey, ss *mcp.ServerSession) (first bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.subs[k] == nil {
		n := 0
		for sk := range o.subs {
			if sk.part == k.part {
				n++
			}
		}
		if n >= maxSubscriptions {
			return false, &jsonrpc.Error{Code: codeRefused, Message: fmt.Sprintf("colibri: too_large: this caller already holds %d subscriptions on %s; unsubscribe from some first", maxSubscriptions, o.name)}
		}
		o.subs[k] = map[*mcp.ServerSession]bool{}
	}
	first = len(o.subs[k]) == 0
	o.subs[k][ss] = true
	return first, nil
}

// unsubscribed ends ss's subscription to k's URI, and reports whether it
// was the last (the hosted subscription ends with it).
func (o *only) unsubscribed(k subKey, ss *mcp.ServerSession) (last bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.subs[k]
	if m == nil || !m[ss] {
		return false
	}
	delete(m, ss)
	if len(m) > 0 {
		return false
	}
	delete(o.subs, k)
	return true
}

// learn remembers ss's principal, forgetting sessions that have ended
// when the table has grown.
func (o *only) learn(ss *mcp.ServerSession, principal string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.who[ss] == principal {
		return
	}
	if len(o.who) >= 64 {
		live := map[*mcp.ServerSession]bool{}
		for s := range o.server.Sessions() {
			live[s] = true
		}
		for s := range o.who {
			if !live[s] {
				delete(o.who, s)
			}
		}
	}
	o.who[ss] = principal
}

func (o *only) principalOf(ss *mcp.ServerSession) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	p, ok := o.who[ss]
	if !ok {
		return "\x00" // a session not yet seen matches no partition
	}
	return p
}

func (o *only) unsubscribe(ctx context.Context, r *mcp.UnsubscribeRequest) error {
	_, srv, err := o.entry()
	if err != nil {
		return o.failed(ctx, err)
	}
	if !srv.IsPersistent() {
		return nil // nothing was subscribed
	}
	c := o.callerOf(ctx, r.Session, r.Params)
	if !o.unsubscribed(subKey{c.Partition, r.Params.URI}, r.Session) {
		return nil // other sessions of this caller still hold it, or it was never held
	}
	_, err = ask(o, ctx, srv, c, "resources/unsubscribe", func(ctx context.Context, cs *mcp.ClientSession) (struct{}, error) {
		return struct{}{}, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: r.Params.URI})
	})
	return err
}

// setLevel remembers the caller's level (each request's session is
// offered it) and sets it on the warm session at once, since a persistent
// server's session outlives the request that opened it.
func (o *only) setLevel(ctx context.Context, r *mcp.ServerRequest[*mcp.SetLoggingLevelParams]) {
	o.s.levels.Set(o.server, r.Session, r.Params.Level)
	_, srv, err := o.entry()
	if err != nil || !srv.IsPersistent() || o.caps.Logging == nil {
		return
	}
	_, err = ask(o, ctx, srv, o.callerOf(ctx, r.Session, r.Params), "logging/setLevel", func(ctx context.Context, cs *mcp.ClientSession) (struct{}, error) {
		if cs.InitializeResult().ProtocolVersion >= "2026-07-28" {
			return struct{}{}, nil // no logging/setLevel: the level goes in each request's _meta
		}
		return struct{}{}, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: r.Params.Level})
	})
	if err != nil {
		o.s.log.DebugContext(ctx, "logging/setLevel not passed on", "server", o.name, "err", err)
	}
}

// notified hears every notification of the hosted server's sessions
// (Host.WatchNotifications) and passes on to the caller what it may see:
// list_changed of each kind, resources/updated (to the sessions that
// subscribed, go-sdk's books), and log messages under the server's own
// logger names (go-sdk's session drops those below the level its caller
// set). Progress is relayed by the call it belongs to.
func (o *only) notified(srv *registry.Server, part, method string, params json.RawMessage) {
	if srv.Name != o.name || params == nil && method == "notifications/message" {
		return
	}
	var f func(ctx context.Context)
	switch method {
	case "notifications/tools/list_changed":
		f = func(context.Context) { o.touch(kindTools) }
	case "notifications/prompts/list_changed":
		f = func(context.Context) { o.touch(kindPrompts) }
	case "notifications/resources/list_changed":
		f = func(context.Context) { o.touch(kindResources) }
	case "notifications/resources/updated":
		var p mcp.ResourceUpdatedNotificationParams
		if json.Unmarshal(params, &p) != nil || p.URI == "" {
			return
		}
		p.Meta = nil
		f = func(ctx context.Context) { _ = o.server.ResourceUpdated(ctx, &p) }
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(params, &p) != nil {
			return
		}
		p.Meta = nil
		f = func(ctx context.Context) {
			// Only to the callers whose hosted sessions these are: a
			// server's log may say what another caller asked it.
			for ss := range o.server.Sessions() {
				if o.principalOf(ss) == part {
					_ = ss.Log(ctx, &p)
				}
			}
		}
	default:
		return
	}
	select {
	case o.notes <- func() { f(context.Background()) }:
	default:
		o.s.log.Debug("a hosted notification was dropped: the caller is slow to read", "server", o.name, "method", method)
	}
}

// deliver sends the queued notifications until ctx ends.
func (o *only) deliver(ctx context.Context) {
	for {
		select {
		case f := <-o.notes:
			f()
		case <-ctx.Done():
			return
		}
	}
}

type featureKind int

const (
	kindTools featureKind = iota
	kindPrompts
	kindResources
)

// placeholder names what touch adds to go-sdk's own tables and removes at
// once: never listed (the lists are the hosted server's, answered by
// dispatch), it only has go-sdk send list_changed, debounced, to every
// session, in each protocol version's way (2026-07-28's
// subscriptions/listen included).
const placeholder = "colibri-only-list-changed"

// touch has go-sdk tell the caller that a list of kind changed.
func (o *only) touch(kind featureKind) {
	switch kind {
	case kindTools:
		if o.caps.Tools == nil || !o.caps.Tools.ListChanged {
			return
		}
		o.server.AddTool(&mcp.Tool{Name: placeholder, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, errors.New("not a tool")
			})
		o.server.RemoveTools(placeholder)
	case kindPrompts:
		if o.caps.Prompts == nil || !o.caps.Prompts.ListChanged {
			return
		}
		o.server.AddPrompt(&mcp.Prompt{Name: placeholder},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return nil, errors.New("not a prompt")
			})
		o.server.RemovePrompts(placeholder)
	case kindResources:
		if o.caps.Resources == nil || !o.caps.Resources.ListChanged {
			return
		}
		uri := "colibri-only:" + placeholder
		o.server.AddResource(&mcp.Resource{URI: uri, Name: placeholder},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return nil, errors.New("not a resource")
			})
		o.server.RemoveResources(uri)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
