package tools

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/internal/principal"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/policy"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools/record"
)

// allowed is the policy's one decision (docs/operations.md#policy) on tool of
// srv for the caller of ctx, read from the tool's annotations as the hosted
// server listed them. Everything that shows or calls a hosted tool asks
// here: list_tools, call_tool, the command line, aggregate mode.
func (s *Service) allowed(ctx context.Context, reg *registry.Registry, srv *registry.Server, tool *mcp.Tool) policy.Decision {
	return policy.Decide(reg.Rules(srv), tool.Name, annotations(tool), principal.From(ctx))
}

// visible is tools less those whose names break the tool-name format
// (never offered, whatever the policy), those the policy hides from the
// caller of ctx and, under pin: enforce, those that differ from their pins
// (screen); a pin file that cannot be read hides them all.
func (s *Service) visible(ctx context.Context, reg *registry.Registry, srv *registry.Server, tools []*mcp.Tool) []*mcp.Tool {
	kept, _, err := s.screen(ctx, reg, srv, tools)
	if err != nil {
		return nil
	}
	return kept
}

// allowedOf is tools less those the policy hides from the caller of ctx.
func (s *Service) allowedOf(ctx context.Context, reg *registry.Registry, srv *registry.Server, tools []*mcp.Tool) []*mcp.Tool {
	if reg.Rules(srv).Empty() || tools == nil {
		return tools
	}
	out := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if s.allowed(ctx, reg, srv, t).Allow {
			out = append(out, t)
		}
	}
	return out
}

// guardCall applies the policy to a call of tool name on srv before
// anything is started, with the name alone (a denial that no annotations
// could lift), and returns the caller to hand the host, whose Allow the
// host asks twice: before it starts anything, on the list it already
// holds, and before tools/call is sent, on the list the call is checked
// against, so that no call runs on an older decision. The pins look at the
// same two lists (checkPinned; the held one only for a caller offering no
// capability, whose list it is). Shown keeps an unknown_tool failure from
// naming tools the caller may not see.
func (s *Service) guardCall(ctx context.Context, reg *registry.Registry, srv *registry.Server, name string, caller *session.Caller) (*session.Caller, error) {
	rules := reg.Rules(srv)
	pinning := s.pinning(reg, srv)
	if rules.Empty() && !pinning {
		return caller, nil
	}
	note := record.NoteOf(ctx)
	if !rules.Empty() {
		d := policy.DecideByName(rules, name, principal.From(ctx))
		note.Decided(d)
		if !d.Allow {
			return nil, s.denied(ctx, srv.Name, name, d)
		}
	}
	caps := capsOf(caller)
	c := &session.Caller{}
	if caller != nil {
		cp := *caller
		c = &cp
	}
	c.Allow = func(t *mcp.Tool, list []*mcp.Tool, held bool) error {
		if !rules.Empty() {
			d := s.allowed(ctx, reg, srv, t)
			note.Decided(d)
			if !d.Allow {
				return s.denied(ctx, srv.Name, t.Name, d)
			}
		}
		if pinning && (!held || caps == pin.NoCaps) {
			return s.checkPinned(ctx, reg, srv, caps, t, list)
		}
		return nil
	}
	c.Shown = func(list []*mcp.Tool) []*mcp.Tool { return s.visible(ctx, reg, srv, list) }
	return c, nil
}

// denied is the failure of a call the policy refuses. Its message says
// only that: which rule decided is for the operator (log and audit), not
// for the caller to probe.
func (s *Service) denied(ctx context.Context, server, tool string, d policy.Decision) error {
	s.log.DebugContext(ctx, "policy denied a call", "server", server, "tool", tool, "principal", principal.From(ctx), "rule", d.Rule)
	return &failure.Error{Kind: failure.KindDenied, Server: server, Tool: tool,
		Err: fmt.Errorf("policy denies %s on %s for this caller", tool, server)}
}

// annotations are a hosted tool's hints, as the policy reads them.
func annotations(t *mcp.Tool) *policy.Annotations {
	a := t.Annotations
	if a == nil {
		return nil
	}
	return policy.FromHints(a.ReadOnlyHint, a.DestructiveHint, a.OpenWorldHint)
}

func toolNamed(tools []*mcp.Tool, name string) *mcp.Tool {
	for _, t := range tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}
