package tools

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools/catalog"
	"github.com/colibri-mcp/colibri-mcp/tools/record"
)

// Pinned tool definitions (docs/cli.md#pinned-tool-definitions): every list colibri
// shows or calls from passes pinVerdict, through screen (list_tools,
// aggregate mode) or guardCall's gate (each call, on the very list it is
// checked against: callGate), so that no path serves an unpinned definition.

// pinning reports whether srv's tool lists are checked against pins.
func (s *Service) pinning(reg *registry.Registry, srv *registry.Server) bool {
	return s.opts.Pins != nil && reg.PinMode(srv) != registry.PinOff
}

// pinVerdict compares tools, listed by srv for a session offered caps,
// with their pins (recording them the first time). A pin file that cannot
// be read or written fails the request (config): it is never taken for
// "nothing pinned", which would trust every tool again.
func (s *Service) pinVerdict(reg *registry.Registry, srv *registry.Server, caps string, tools []*mcp.Tool) (pin.Verdict, error) {
	if !s.pinning(reg, srv) || tools == nil {
		return pin.Verdict{}, nil
	}
	s.configurePins(reg)
	v, err := s.opts.Pins.Check(srv.Name, caps, tools)
	if err != nil {
		return v, &failure.Error{Kind: failure.KindConfig, Server: srv.Name, Err: err}
	}
	return v, nil
}

// screen is what the caller of ctx is shown of tools, a list srv gave a
// session offered no capability: the tools whose names keep to MCP's
// tool-name format (never offered otherwise, whatever the policy) that the
// policy allows, less, under pin: enforce, those that differ from their
// pins; changed lists those (the policy allowing), hidden or, under pin:
// warn, flagged. Every list colibri offers passes here: list_tools,
// aggregate mode, and the query's.
func (s *Service) screen(ctx context.Context, reg *registry.Registry, srv *registry.Server, tools []*mcp.Tool) (kept []*mcp.Tool, changed []pin.Change, err error) {
	return s.screenFor(ctx, reg, srv, pin.NoCaps, tools)
}

// screenFor is screen for a list srv gave a session offered caps
// (capsOf): serve --only lists with the caller's capabilities, as the
// server would list to that caller directly.
func (s *Service) screenFor(ctx context.Context, reg *registry.Registry, srv *registry.Server, caps string, tools []*mcp.Tool) (kept []*mcp.Tool, changed []pin.Change, err error) {
	tools, _ = splitToolNames(tools)
	kept = s.allowedOf(ctx, reg, srv, tools)
	v, err := s.pinVerdict(reg, srv, caps, tools)
	if err != nil {
		return kept, nil, err
	}
	s.blockFlagged(reg, srv, &v)
	if len(v.Changed) == 0 {
		return kept, nil, nil
	}
	enforce := reg.PinMode(srv) == registry.PinEnforce
	out := make([]*mcp.Tool, 0, len(kept))
	seen := map[string]bool{}
	for _, t := range kept {
		if what, ok := v.Changed[t.Name]; ok {
			if !seen[t.Name] {
				seen[t.Name] = true
				changed = append(changed, pin.Change{Name: t.Name, What: what})
			}
			if enforce {
				continue
			}
		}
		out = append(out, t)
	}
	return out, changed, nil
}

// pinnedOnly is entries, list_tools' view of srv's tools, less the members
// that pins do not cover (_meta, icons) when srv's tools are pinned.
// list_tools' result is read by the model: a server could otherwise change
// what the model reads after its tools were trusted, unchecked (a "note"
// in _meta, text in a data: icon), past every pin.
func (s *Service) pinnedOnly(reg *registry.Registry, srv *registry.Server, entries []ToolEntry) []ToolEntry {
	if !s.pinning(reg, srv) {
		return entries
	}
	for i := range entries {
		entries[i].Meta, entries[i].Icons = nil, nil
	}
	return entries
}

// flagged is entries, list_tools' view of tools (srv's list), with each
// flagged tool's flags.
func (s *Service) flagged(reg *registry.Registry, srv *registry.Server, tools []*mcp.Tool, entries []ToolEntry) []ToolEntry {
	if !s.pinning(reg, srv) || reg.PinScanMode(srv) == registry.ScanOff || len(entries) == 0 {
		return entries
	}
	flags, err := s.opts.Pins.Flagged(srv.Name, pin.NoCaps, tools) // tools: what the caller is shown, not the list the pins judge
	if err != nil {
		return entries
	}
	var hosted pin.Hosted
	for i := range entries {
		t := toolNamed(tools, entries[i].Name)
		if t == nil {
			continue
		}
		fl := slices.Clone(flags[t.Name].Flags)
		if hosted == nil {
			hosted = s.hostedNames(reg)
		}
		if c, err := pin.Canonical(t); err == nil {
			fl = append(fl, pin.ScanShadowing(srv.Name, c, hosted)...)
		}
		entries[i].Flags = fl
	}
	return entries
}

// checkPinned is the pins' look at a call of tool, found in list (what a
// session offered caps listed): under enforce a changed or new tool is
// refused, tool_changed, before tools/call is sent; under warn it is
// called, logged and audited as changed.
func (s *Service) checkPinned(ctx context.Context, reg *registry.Registry, srv *registry.Server, caps string, tool *mcp.Tool, list []*mcp.Tool) error {
	v, err := s.pinVerdict(reg, srv, caps, list)
	if err != nil {
		return err
	}
	s.blockFlagged(reg, srv, &v)
	what, ok := v.Changed[tool.Name]
	if !ok {
		if fl := v.Flags[tool.Name].Flags; len(fl) > 0 { // shadowing is for listings: a call pays no scan of the others
			record.NoteOf(ctx).Pinned("flagged")
			s.log.WarnContext(ctx, "calling a hosted tool the pin scan flagged (pin_scan: warn)", "server", srv.Name, "tool", tool.Name, "flags", flagKinds(fl))
		}
		return nil
	}
	if len(what) == 1 && what[0] == pin.WhatFlagged {
		record.NoteOf(ctx).Pinned("flagged")
		if reg.PinMode(srv) == registry.PinEnforce {
			return toolFlagged(srv.Name, tool.Name, v.Flags[tool.Name].Flags, v.Locked)
		}
		return nil
	}
	record.NoteOf(ctx).Pinned("changed")
	if reg.PinMode(srv) == registry.PinEnforce {
		return toolChanged(srv.Name, tool.Name, what, true, v.Locked)
	}
	s.log.WarnContext(ctx, "calling a hosted tool whose definition differs from its pin (pin: warn)",
		"server", srv.Name, "tool", tool.Name, "changed", strings.Join(what, ","))
	return nil
}

// toolChanged is the failure of a call to (or a listing of) a tool that
// differs from its pin; locked: from the lock (docs/security.md, locked
// pins), which colibri never changes in place.
func toolChanged(server, tool string, what []string, call, locked bool) error {
	if len(what) == 1 && what[0] == pin.WhatFlagged {
		return toolFlagged(server, tool, nil, locked)
	}
	isNew := len(what) == 1 && what[0] == pin.WhatNew
	msg := fmt.Sprintf("the tool's definition changed since it was pinned (%s)", strings.Join(what, ", "))
	hint := fmt.Sprintf("an operator reviews it with `colibri-mcp pins diff %s` and accepts it with `colibri-mcp pins accept %s %s`", server, server, shellWord(tool))
	switch {
	case locked && isNew:
		msg = "the tool is not in the locked pin file"
	case locked:
		msg = fmt.Sprintf("the tool's definition differs from the one in the locked pin file (%s)", strings.Join(what, ", "))
	case isNew:
		msg = "the tool is new since the server's tools were pinned"
	}
	if locked {
		hint = fmt.Sprintf("the lock is renewed where the servers are pinned: `colibri-mcp pins diff %s`, `colibri-mcp pins accept %s`, `colibri-mcp pins export --output pins.lock`, then shipped", server, server)
	}
	if call {
		msg += "; nothing was sent"
	}
	return &failure.Error{Kind: failure.KindToolChanged, Server: server, Tool: tool, Phase: failure.PhaseList,
		Err: fmt.Errorf("%s", msg), Hint: hint}
}

// blockFlagged adds to v's changes each flagged definition no person
// accepted, where the scan blocks: "pin_scan": "block", or a lock (which
// trusts what it marks as reviewed, and nothing flagged that it does not
// mark); never with "pin_scan": "off" (nothing is scanned) nor a server
// whose own pin is warn or off.
func (s *Service) blockFlagged(reg *registry.Registry, srv *registry.Server, v *pin.Verdict) {
	mode := reg.PinScanMode(srv)
	if mode == registry.ScanOff || !(mode == registry.ScanBlock || v.Locked) || reg.PinMode(srv) != registry.PinEnforce {
		return
	}
	for name, f := range v.Flags {
		if f.Reviewed {
			continue
		}
		if v.Changed == nil {
			v.Changed = map[string][]string{}
		}
		if _, changed := v.Changed[name]; !changed {
			v.Changed[name] = []string{pin.WhatFlagged}
		}
	}
}

// hostedNames are the tool names of every hosted server colibri knows a
// list of, for shadowing: those that look like identifiers, and each
// exposed name of aggregate mode.
func (s *Service) hostedNames(reg *registry.Registry) pin.Hosted {
	if s.opts.Host == nil {
		return nil
	}
	var reqs []catalog.NameRequest
	lists := map[string][]*mcp.Tool{}
	for _, name := range reg.Names() {
		srv := reg.Servers[name]
		tools := s.opts.Host.KnownTools(srv)
		lists[name] = tools
		for _, t := range tools {
			reqs = append(reqs, catalog.NameRequest{ToolRef: catalog.ToolRef{Server: name, Tool: t.Name}, Prefix: srv.Prefix()})
		}
	}
	exposed := catalog.ExposedNames(reqs)
	hosted := pin.Hosted{}
	for name, tools := range lists {
		for _, t := range tools {
			hosted.Add(name, t.Name, exposed[catalog.ToolRef{Server: name, Tool: t.Name}])
		}
	}
	return hosted
}

func flagKinds(flags []pin.Flag) string {
	var kinds []string
	for _, f := range flags {
		if !slices.Contains(kinds, f.Flag) {
			kinds = append(kinds, f.Flag)
		}
	}
	return strings.Join(kinds, ",")
}

// toolFlagged is the refusal of a call to a tool the pin scan flagged,
// which no person accepted, where the scan blocks.
func toolFlagged(server, tool string, flags []pin.Flag, locked bool) error {
	parts := []string{}
	for _, f := range flags {
		parts = append(parts, fmt.Sprintf("%s in %s", f.Flag, f.Where))
	}
	if len(parts) == 0 {
		parts = append(parts, "colibri-mcp pins diff shows them")
	}
	msg := fmt.Sprintf("the tool's definition was flagged by the pin scan (%s) and no one accepted it; nothing was sent", strings.Join(parts, "; "))
	hint := fmt.Sprintf("an operator reads the flags with `colibri-mcp pins diff %s` and, if the definition is honest, accepts it with `colibri-mcp pins accept %s %s`", server, server, shellWord(tool))
	if locked {
		msg = fmt.Sprintf("the tool's definition was flagged by the pin scan (%s) and the locked pin file does not mark it reviewed; nothing was sent", strings.Join(parts, "; "))
		hint = "accept it where the lock is made (colibri-mcp pins accept), export the lock again and ship it"
	}
	return &failure.Error{Kind: failure.KindToolChanged, Server: server, Tool: tool, Phase: failure.PhaseList, Err: fmt.Errorf("%s", msg), Hint: hint}
}

// PinConfig is what the pins are told of reg: whether it locks the pin
// file, and its entries' fingerprints. Whoever checks lists against a
// pin.Store configures it with the registry the check runs under (tools
// does so on each new version of the registry).
func PinConfig(reg *registry.Registry) pin.Config {
	c := pin.Config{Locked: reg.Locked(), Entries: make(map[string]*pin.Fingerprint, len(reg.Servers)), NoScan: map[string]bool{}}
	for name, srv := range reg.Servers {
		if reg.PinScanMode(srv) == registry.ScanOff {
			c.NoScan[name] = true
		}
		if fp := srv.Fingerprint(); fp != nil {
			c.Entries[name] = &pin.Fingerprint{Digest: fp.Digest, Fields: fp.Fields}
			if srv.Source != nil {
				c.Entries[name].Source = srv.Source.Name + "@" + srv.Source.Version
			}
		}
	}
	return c
}

// pinsLocked reports whether the pins are a lock.
func (s *Service) pinsLocked() bool {
	if s.opts.Pins == nil {
		return false
	}
	locked, _ := s.opts.Pins.Locked()
	return locked
}

// configurePins tells the pins what reg says, once per version of the
// registry read.
func (s *Service) configurePins(reg *registry.Registry) {
	if s.opts.Pins == nil || s.pinsFor.Load() == reg {
		return
	}
	s.opts.Pins.Configure(PinConfig(reg))
	s.pinsFor.Store(reg)
}

// capsOf is the pins' name of the capabilities a session for caller is
// offered: what host offers a hosted server for it (sampling, elicitation,
// roots).
func capsOf(c *session.Caller) string {
	if c == nil {
		return pin.NoCaps
	}
	var names []string
	if c.CreateMessage != nil {
		names = append(names, "sampling")
	}
	if c.Elicit != nil {
		names = append(names, "elicitation")
	}
	if c.ListRoots != nil {
		names = append(names, "roots")
	}
	return pin.Caps(names...)
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./-]+$`)

// shellWord is s as one word of a POSIX shell command line.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pinGeneration is the pins' generation (one stat of the pin file): when it
// moves, aggregate mode decides again what the pins hide.
func (s *Service) pinGeneration() uint64 {
	if s.opts.Pins == nil {
		return 0
	}
	gen, _ := s.opts.Pins.Generation()
	return gen
}
