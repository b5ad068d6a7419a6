package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools/record"
)

// Pins of serve --only's prompts, templates, resources (with
// "pin_resources") and instructions (docs/security.md): each list is
// checked whole against its pins when it is read; under pin: enforce what
// changed is left out of the list, and a get or read of it is refused
// (tool_changed, −32010), nothing sent; under warn it is logged and kept.

// pinned is the verdict on one list of kind, and whether it is enforced.
type pinned struct {
	changed map[string][]string
	enforce bool
	locked  bool // judged against a lock: what it lacks is "not in the locked pin file"
}

// hides reports whether the definition name is left out (and refused).
func (p pinned) hides(name string) bool {
	_, ok := p.changed[name]
	return ok && p.enforce
}

// pinList checks a list of kind read from srv for a session offered caps.
func (o *only) pinList(ctx context.Context, reg *registry.Registry, srv *registry.Server, kind pin.Kind, caps string, check func(*pin.Store) (pin.Verdict, error)) (pinned, error) {
	if !o.s.pinning(reg, srv) || kind == pin.KindResource && !srv.PinResources {
		return pinned{}, nil
	}
	o.s.configurePins(reg)
	v, err := check(o.s.opts.Pins)
	if err != nil {
		return pinned{}, &failure.Error{Kind: failure.KindConfig, Server: srv.Name, Err: err}
	}
	o.s.blockFlagged(reg, srv, &v)
	p := pinned{changed: v.Changed, enforce: reg.PinMode(srv) == registry.PinEnforce, locked: v.Locked}
	if len(p.changed) > 0 && !p.enforce {
		names := make([]string, 0, len(p.changed))
		for n := range p.changed {
			names = append(names, n)
		}
		o.s.log.WarnContext(ctx, "offering hosted definitions that differ from their pins (pin: warn)",
			"server", srv.Name, "kind", kind, "changed", strings.Join(names, ","))
	}
	return p, nil
}

// definitionChanged is the refusal of a get or read of what differs from
// its pin.
func definitionChanged(ctx context.Context, server string, kind pin.Kind, name string, what []string, locked bool) error {
	sel := pin.Selector{Kind: kind, Name: name}.String()
	msg := fmt.Sprintf("the %s's definition changed since it was pinned (%s); nothing was sent", kind, strings.Join(what, ", "))
	hint := fmt.Sprintf("an operator reviews it with `colibri-mcp pins diff %s` and accepts it with `colibri-mcp pins accept %s %s`", server, server, shellWord(sel))
	isNew := len(what) == 1 && what[0] == pin.WhatNew
	flagged := len(what) == 1 && what[0] == pin.WhatFlagged
	switch {
	case flagged:
		msg = fmt.Sprintf("the %s's definition was flagged by the pin scan and no one accepted it; nothing was sent", kind)
	case locked && isNew:
		msg = fmt.Sprintf("the %s is not in the locked pin file; nothing was sent", kind)
	case locked:
		msg = fmt.Sprintf("the %s's definition differs from the one in the locked pin file (%s); nothing was sent", kind, strings.Join(what, ", "))
	case isNew:
		msg = fmt.Sprintf("the %s is new since the server was pinned; nothing was sent", kind)
	}
	if flagged {
		record.NoteOf(ctx).Pinned("flagged")
	} else {
		record.NoteOf(ctx).Pinned("changed")
	}
	if locked {
		hint = fmt.Sprintf("the lock is renewed where the servers are pinned: `colibri-mcp pins diff %s`, `colibri-mcp pins accept %s`, `colibri-mcp pins export --output pins.lock`, then shipped", server, server)
	}
	return &failure.Error{Kind: failure.KindToolChanged, Server: server, Tool: sel, Err: fmt.Errorf("%s", msg), Hint: hint}
}

// pinnedInstructions is what the caller is told of the server's
// instructions: under pin: enforce, nothing while they differ from their
// pin (until `pins accept SERVER instructions`).
func (o *only) pinnedInstructions(ctx context.Context, srv *registry.Server, text string) (string, error) {
	reg, err := o.s.registry(ctx)
	if err != nil {
		return "", err
	}
	p, err := o.pinList(ctx, reg, srv, pin.KindInstructions, pin.NoCaps, func(st *pin.Store) (pin.Verdict, error) {
		return st.CheckInstructions(srv.Name, pin.NoCaps, &pin.Instructions{Text: text})
	})
	if err != nil {
		return "", err
	}
	if p.hides(pin.InstructionsName) {
		o.s.log.WarnContext(ctx, "the hosted server's instructions differ from their pin: withheld until accepted",
			"server", srv.Name, "hint", "colibri-mcp pins diff "+srv.Name)
		return "", nil
	}
	return text, nil
}

// listAllPrompts reads every page of the server's prompts.
func listAllPrompts(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Prompt, error) {
	return pages(ctx, "prompts/list", func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
		res, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Prompts, res.NextCursor, nil
	})
}

// listAllResources reads every page of the server's resources.
func listAllResources(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Resource, error) {
	return pages(ctx, "resources/list", func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
		res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Resources, res.NextCursor, nil
	})
}

// listAllTemplates reads every page of the server's resource templates.
func listAllTemplates(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.ResourceTemplate, error) {
	return pages(ctx, "resources/templates/list", func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
		res, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.ResourceTemplates, res.NextCursor, nil
	})
}
