package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools/describe"
)

// offer is one tool as the servers have it.
type offer struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
	sum     [sha256.Size]byte // of the tool's JSON: a changed tool is added again
}

// madeOffer is the offer made of one hosted tool (src) under one name, or
// why it cannot be offered (unfit). A hosted list read again and found the
// same keeps its tools, so an offer is remade only for a tool that changed:
// a registry edit then costs a lookup per tool, not an encoding of each.
type madeOffer struct {
	src   *mcp.Tool
	name  string
	offer offer
	unfit error
}

func (c *Catalog) lastGoodRegistry() *registry.Registry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastGood
}

// publish builds what should be offered now and brings every server to it.
func (c *Catalog) publish() {
	want := map[string]offer{}
	for _, t := range describe.Tools(describe.View{Registry: c.reg, RegistryErr: c.regErr, ExternalCall: c.opts.ExternalCall, Aggregate: c.lists != nil}) {
		want[t.Name] = offer{tool: t, handler: c.opts.Own(t.Name)}
	}
	// When nothing the hosted tools depend on changed (an edit of a
	// description, say), they stay offered as they are: a registry edit
	// then costs nothing per hosted tool, however many there are.
	keep := func(string) bool { return false }
	if c.lists != nil && !c.exposeHosted(want) {
		keep = func(name string) bool { _, ok := c.routes[name]; return ok }
	}
	changed := false
	for name, o := range want {
		if o.sum == ([sha256.Size]byte{}) {
			b, _ := json.Marshal(o.tool)
			o.sum = sha256.Sum256(b)
		}
		if old, ok := c.offered[name]; ok && old.sum == o.sum {
			continue
		}
		changed = true
		var err error
		for _, server := range c.servers {
			if err = add(server, o); err != nil {
				break
			}
			if afterChange != nil {
				afterChange()
			}
		}
		if err != nil {
			// go-sdk refused a hosted tool that passed addable: a last
			// resort, never fatal.
			ref := c.routes[name]
			c.skip(ref, err)
			delete(c.routes, name)
			delete(c.exposed, ref)
			delete(want, name)
			continue
		}
		c.offered[name] = o
	}
	var gone []string
	for name := range c.offered {
		if _, ok := want[name]; !ok && !keep(name) {
			gone = append(gone, name)
			delete(c.offered, name)
		}
	}
	if len(gone) > 0 {
		changed = true
		for _, server := range c.servers {
			server.RemoveTools(gone...)
		}
	}
	if changed {
		c.changes++ // (under c.mu, as the whole publish: notify.go)
	}
}

// exposeHosted adds to want every hosted tool the policy allows, named by
// ExposedNames, and routes each name to its tool; it reports false, adding
// nothing, when what they depend on has not changed since the last time. A tool go-sdk would
// refuse is left out (and logged once), before it is named: it takes no
// name from another.
//
// One list is offered to every session, so the policy is asked here for no
// caller in particular (the top-level and server rules); a caller's own
// rules, which can only narrow, are applied to each session's tools/list
// (visibleTo) and, like every rule, to each call.
func (c *Catalog) exposeHosted(want map[string]offer) bool {
	reg := c.lastGood
	if reg == nil {
		return true
	}
	key := c.hostedKey(reg)
	if key == c.exposedFrom {
		return false
	}
	c.exposedFrom = key
	var reqs []NameRequest
	defs := map[ToolRef]*mcp.Tool{}
	made := make(map[ToolRef]madeOffer, len(c.made))
	withdrawn := map[ToolRef]bool{}
	for name, l := range c.lists {
		kept, changed, err := c.opts.Screen(context.Background(), reg, l.srv, l.tools)
		if err != nil {
			c.log.Warn("aggregate mode: a server's tools are not exposed: its pins cannot be read", "server", name, "err", err)
			continue
		}
		if reg.PinMode(l.srv) == registry.PinEnforce {
			// A changed tool's name is withdrawn, not given to another:
			// it keeps its place in the naming (a new one takes none).
			for _, ch := range changed {
				if len(ch.What) == 1 && ch.What[0] == pin.WhatNew {
					continue
				}
				ref := ToolRef{Server: name, Tool: ch.Name}
				withdrawn[ref] = true
				reqs = append(reqs, NameRequest{ToolRef: ref, Prefix: l.srv.Prefix()})
			}
		}
		for _, t := range kept {
			ref := ToolRef{Server: name, Tool: t.Name}
			if _, dup := defs[ref]; dup {
				continue
			}
			m, ok := c.made[ref]
			if !ok || m.src != t {
				m = madeOffer{src: t, unfit: addable(t)}
			}
			made[ref] = m
			if m.unfit != nil {
				c.skip(ref, m.unfit)
				continue
			}
			delete(c.skipped, ref)
			defs[ref] = t
			reqs = append(reqs, NameRequest{ToolRef: ref, Prefix: l.srv.Prefix()})
		}
	}
	c.exposed = ExposedNames(reqs, own...)
	c.withdrawn = make(map[string]ToolRef, len(withdrawn))
	for ref := range withdrawn {
		if name, ok := c.exposed[ref]; ok {
			c.withdrawn[name] = ref
		}
		delete(c.exposed, ref)
	}
	c.routes = make(map[string]ToolRef, len(c.exposed))
	for ref, name := range c.exposed {
		c.routes[name] = ref
		m := made[ref]
		if m.name != name {
			t := defs[ref]
			// The hosted tool as its server describes it, under its
			// exposed name, _meta included: MCP Apps' _meta.ui names a
			// ui:// resource, which colibri serves too (UIOwner, tools/resources.go).
			m.name = name
			m.offer = offer{tool: &mcp.Tool{
				Meta:         t.Meta,
				Name:         name,
				Title:        t.Title,
				Description:  t.Description,
				InputSchema:  t.InputSchema,
				OutputSchema: t.OutputSchema,
				Annotations:  t.Annotations,
				Icons:        t.Icons,
			}, handler: c.opts.Hosted}
			b, _ := json.Marshal(m.offer.tool)
			m.offer.sum = sha256.Sum256(b)
			made[ref] = m
		}
		want[name] = m.offer
	}
	c.made = made
	return true
}

// hostedKey fingerprints what the exposed hosted tools depend on: each
// server's list, prefix and policy, and the top-level policy.
func (c *Catalog) hostedKey(reg *registry.Registry) string {
	h := sha256.New()
	b, _ := json.Marshal(reg.Policy)
	h.Write(b)
	fmt.Fprintf(h, "\x00pins %d %s", c.pinGen, reg.Pin)
	names := make([]string, 0, len(c.lists))
	for name := range c.lists {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		l := c.lists[name]
		b, _ := json.Marshal(l.srv.Policy)
		fmt.Fprintf(h, "\x00%s\x00%s\x00%x\x00%t\x00%s\x00%s", name, l.srv.Prefix(), l.sum, l.tools != nil, b, l.srv.Pin)
	}
	return string(h.Sum(nil))
}

// skip logs, once per reason, that a hosted tool is not exposed.
func (c *Catalog) skip(ref ToolRef, err error) {
	if c.skipped[ref] == err.Error() {
		return
	}
	c.skipped[ref] = err.Error()
	c.log.Warn("aggregate mode: a hosted tool is not exposed (it stays callable through "+describe.CallToolTool+")",
		"server", ref.Server, "tool", ref.Tool, "reason", err)
}

// addable says why t cannot be offered, if it cannot: go-sdk's AddTool
// would refuse it (it panics on an inputSchema that is missing or not of
// type object), or a caller's SDK would. The official TypeScript SDK's
// client (Claude Desktop and many editors are built on it) checks the shape
// the MCP schema gives a tool's schemas: "type": "object", "properties" an
// object of objects (not true or false, though JSON Schema allows them),
// "required" a list of names; for the outputSchema too. One tool it
// refuses fails its whole tools/list, so that one hosted server's mistake
// would hide every tool colibri offers.
func addable(t *mcp.Tool) error {
	if t.InputSchema == nil {
		return errors.New("it has no inputSchema")
	}
	if err := portableSchema(t.InputSchema); err != nil {
		return fmt.Errorf("its inputSchema %w", err)
	}
	if t.OutputSchema != nil {
		if err := portableSchema(t.OutputSchema); err != nil {
			return fmt.Errorf("its outputSchema %w", err)
		}
	}
	return nil
}

// portableSchema says how schema (a tool's inputSchema or outputSchema)
// strays from the shape MCP gives it, if it does.
func portableSchema(schema any) error {
	b, err := json.Marshal(schema)
	if err != nil {
		return fmt.Errorf("cannot be encoded: %w", err)
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m["type"] != "object" {
		return errors.New(`is not of "type": "object", which MCP requires`)
	}
	if p, ok := m["properties"]; ok {
		props, ok := p.(map[string]any)
		if !ok {
			return errors.New(`has "properties" that is not an object, which MCP requires`)
		}
		for name, v := range props {
			if _, ok := v.(map[string]any); !ok {
				return fmt.Errorf(`has a property %q whose schema is not an object, which MCP requires`, describe.OneLine(name, 64))
			}
		}
	}
	if r, ok := m["required"]; ok {
		req, ok := r.([]any)
		if !ok {
			return errors.New(`has "required" that is not a list of names, which MCP requires`)
		}
		for _, v := range req {
			if _, ok := v.(string); !ok {
				return errors.New(`has "required" that is not a list of names, which MCP requires`)
			}
		}
	}
	return nil
}

// add offers o on server. go-sdk panics on a tool it refuses; addable
// checks what it knows of beforehand, and this recovers from the rest.
func add(server *mcp.Server, o offer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("go-sdk refused it: %v", r)
		}
	}()
	server.AddTool(o.tool, o.handler)
	return nil
}
