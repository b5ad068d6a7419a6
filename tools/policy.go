package tools

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
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
	return policy.Decide(reg.Rules(srv), tool.Name, annotations(tool), reqctx.Principal(ctx))
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
// could lift), and returns the gate the host asks about the call (nil when
// neither the policy nor the pins have anything to say of srv).
func (s *Service) guardCall(ctx context.Context, reg *registry.Registry, srv *registry.Server, name string, caller *session.Caller) (host.Gate, error) {
	rules := reg.Rules(srv)
	pinning := s.pinning(reg, srv)
	if rules.Empty() && !pinning {
		return nil, nil
	}
	note := record.NoteOf(ctx)
	if !rules.Empty() {
		d := policy.DecideByName(rules, name, reqctx.Principal(ctx))
		note.Decided(d)
		if !d.Allow {
			return nil, s.denied(ctx, srv.Name, name, d)
		}
	}
	return &callGate{s: s, ctx: ctx, reg: reg, srv: srv, rules: rules, pinning: pinning, caps: capsOf(caller), note: note}, nil
}

// callGate is the host's Gate for one call (host/gate.go): the policy on
// the annotations of the list the host asks about, and the pins on that
// same list, so that no call runs on a decision taken from an older list.
type callGate struct {
	s       *Service
	ctx     context.Context // the call's: its principal, its audit note
	reg     *registry.Registry
	srv     *registry.Server
	rules   policy.Rules
	pinning bool
	caps    string // what the caller offers, as the pins are kept (capsOf)
	note    *record.Note
}

// BeforeStart judges tool on the list the host holds: the policy always,
// the pins only for a caller offering no capability, whose list it is.
func (g *callGate) BeforeStart(tool *mcp.Tool, held []*mcp.Tool) error {
	return g.admit(tool, held, g.caps == pin.NoCaps)
}

// BeforeSend judges tool on the list the call is checked against: the
// policy and the pins.
func (g *callGate) BeforeSend(tool *mcp.Tool, list []*mcp.Tool) error {
	return g.admit(tool, list, true)
}

// Nameable keeps an unknown_tool failure from naming tools the caller may
// not see (visible).
func (g *callGate) Nameable(list []*mcp.Tool) []*mcp.Tool {
	return g.s.visible(g.ctx, g.reg, g.srv, list)
}

// admit is the policy's decision on tool's annotations (noted for the
// audit line), then, when pins is set, the pins' verdict on list.
func (g *callGate) admit(tool *mcp.Tool, list []*mcp.Tool, pins bool) error {
	if !g.rules.Empty() {
		d := g.s.allowed(g.ctx, g.reg, g.srv, tool)
		g.note.Decided(d)
		if !d.Allow {
			return g.s.denied(g.ctx, g.srv.Name, tool.Name, d)
		}
	}
	if g.pinning && pins {
		return g.s.checkPinned(g.ctx, g.reg, g.srv, g.caps, tool, list)
	}
	return nil
}

// denied is the failure of a call the policy refuses. Its message says
// only that: which rule decided is for the operator (log and audit), not
// for the caller to probe.
func (s *Service) denied(ctx context.Context, server, tool string, d policy.Decision) error {
	s.log.DebugContext(ctx, "policy denied a call", "server", server, "tool", tool, "principal", reqctx.Principal(ctx), "rule", d.Rule)
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
