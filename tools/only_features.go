package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/colibri-mcp/colibri-mcp/tools/record"
)

// What serve --only answers for each feature of the hosted server: its
// tools, prompts, resources, templates and completion, each through the
// policy, the pins and the host (only.go says how a request gets here).

func (o *only) listTools(ctx context.Context, r *mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	reg, srv, err := o.entry(ctx)
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
	call.Result = session.RawResult(ctx, res) // relayed as the server wrote it (only_fast.go)
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
	if _, _, err := o.entry(ctx); err != nil {
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
	reg, srv, err := o.entry(ctx)
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
	reg, srv, err := o.entry(ctx)
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
	reg, srv, err := o.entry(ctx)
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
	reg, srv, err := o.entry(ctx)
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
	reg, srv, err := o.entry(ctx)
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
	reg, srv, err := o.entry(ctx)
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
