package catalog

import (
	"context"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// VisibleTo is res (a tools/list page) less the exposed hosted tools the
// policy hides from the caller of ctx: its principal's own rules narrow
// what exposeHosted offered everyone.
func (c *Catalog) VisibleTo(ctx context.Context, res *mcp.ListToolsResult) {
	if c.lists == nil || res == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	reg := c.lastGood
	if reg == nil {
		return
	}
	// colibri's own three tools first, in the order of the workflow, then
	// the hosted ones as go-sdk pages them: sorted by exposed name.
	kept := make([]*mcp.Tool, 0, len(res.Tools)) // a page of go-sdk's: not filtered in place
	for _, own := range own {
		for _, t := range res.Tools {
			if t.Name == own {
				kept = append(kept, t)
			}
		}
	}
	for _, t := range res.Tools {
		ref, hosted := c.routes[t.Name]
		switch {
		case slices.Contains(own, t.Name):
			continue // placed first
		case hosted:
			// By the index, not by a search of the list: a page is a
			// thousand tools, and a server may list tens of thousands.
			l := c.lists[ref.Server]
			tool := l.byName[ref.Tool]
			if tool == nil || !reg.Rules(l.srv).Empty() && !c.opts.Allowed(ctx, reg, l.srv, tool) {
				continue
			}
		}
		kept = append(kept, t)
	}
	res.Tools = kept
}

// Route is the hosted tool an exposed name stands for.
func (c *Catalog) Route(name string) (ToolRef, bool) {
	if c.lists == nil {
		return ToolRef{}, false // not in aggregate mode
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ref, ok := c.routes[name]
	return ref, ok
}

// Withdrawn is the hosted tool an exposed name stood for when the pins
// hide it (its definition changed since it was pinned, pin enforce): a
// call by that name is told tool_changed, with the pins diff to run, not
// unknown_tool.
func (c *Catalog) Withdrawn(name string) (ToolRef, bool) {
	if c.lists == nil {
		return ToolRef{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ref, ok := c.withdrawn[name]
	return ref, ok
}

// ExposedName is the aggregate name of server's tool, or "".
func (c *Catalog) ExposedName(server, tool string) string {
	if c.lists == nil {
		return "" // not in aggregate mode
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exposed[ToolRef{Server: server, Tool: tool}]
}

// OutputChecked reports whether a caller may check a result of a call by
// name against an outputSchema: name is an exposed hosted tool that
// declares one, or an aggregate name no longer exposed, which the caller
// may still hold with one. colibri's own failure of such a call is then
// better without structuredContent: a client checks a result's
// structuredContent against the tool's outputSchema (the TypeScript SDK
// throws when it does not match), so that colibri_error would hide
// colibri's message behind a schema error.
func (c *Catalog) OutputChecked(name string) bool {
	if c.lists == nil || slices.Contains(own, name) {
		return false
	}
	c.mu.Lock()
	o, offered := c.offered[name]
	_, hosted := c.routes[name]
	c.mu.Unlock()
	return !offered || !hosted || o.tool.OutputSchema != nil
}

// Held is srv's list as aggregate mode last read it, or nil.
func (c *Catalog) Held(srv *registry.Server) []*mcp.Tool {
	if c.lists == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.lists[srv.Name]; l != nil && l.readKey == srv.ProcessKey() {
		return l.tools
	}
	return nil
}

// uiURI is the ui:// resource a tool's _meta names, or "" (MCP Apps: the
// caller's host reads it with resources/read).
func uiURI(t *mcp.Tool) string {
	if ui, ok := t.Meta["ui"].(map[string]any); ok {
		if u, ok := ui["resourceUri"].(string); ok {
			return u
		}
	}
	u, _ := t.Meta["ui/resourceUri"].(string) // the extension's earlier key
	return u
}

// UIOwner is the server and the tool whose _meta names uri, in the lists
// aggregate mode holds.
func (c *Catalog) UIOwner(uri string) (*registry.Server, *mcp.Tool) {
	if c.lists == nil || uri == "" {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range sortedKeys(c.lists) {
		l := c.lists[name]
		for _, t := range l.tools {
			if uiURI(t) == uri {
				return l.srv, t
			}
		}
	}
	return nil, nil
}

func sortedKeys(m map[string]*hostedList) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
