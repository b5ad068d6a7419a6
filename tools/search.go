package tools

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/internal/toolsearch"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools/describe"
)

// SearchResult is list_tools' structuredContent with a query.
type SearchResult struct {
	Matches []SearchMatch `json:"matches"`
	// Unseen names the servers whose tools colibri has not read yet (a
	// plain list_tools of one reads them).
	Unseen []string `json:"unseen"`
}

// SearchMatch is one tool a query found.
type SearchMatch struct {
	Server      string  `json:"server"`
	Tool        string  `json:"tool"`
	ExposedName string  `json:"exposed_name,omitempty"`
	Description string  `json:"description,omitempty"` // its first sentence
	Score       float64 `json:"score"`
}

// maxMatches is how many matches a query returns.
const maxMatches = 10

// SearchTools ranks the tools of every server (or of in.Server) against
// in.Query, from the lists colibri already holds: the host's known lists
// (the list cache and warm sessions), the aggregate catalog's, and the
// pinned definitions. It starts no process and contacts no server; the
// policy hides what it hides from list_tools.
func (s *Service) SearchTools(ctx context.Context, in ListToolsInput) (*SearchResult, error) {
	if in.Tool != "" {
		return nil, &failure.Error{Kind: failure.KindInvalidArguments, Err: errors.New(ListToolsTool + ": arguments: query and tool cannot be given together")}
	}
	reg, err := s.registry(ctx)
	if err != nil {
		return nil, err
	}
	names := reg.Names()
	if in.Server != "" {
		srv, err := lookup(reg, in.Server)
		if err != nil {
			return nil, err
		}
		names = []string{srv.Name}
	}
	out := &SearchResult{Matches: []SearchMatch{}, Unseen: []string{}}
	var corpus []toolsearch.Tool
	for _, name := range names {
		srv := reg.Servers[name]
		tools := s.heldTools(srv)
		if tools == nil {
			out.Unseen = append(out.Unseen, name)
			continue
		}
		for _, t := range s.visible(ctx, reg, srv, tools) {
			corpus = append(corpus, toolsearch.Tool{Server: name, Name: t.Name, Title: t.Title, Description: t.Description})
		}
	}
	for _, m := range toolsearch.Rank(in.Query, corpus, maxMatches) {
		out.Matches = append(out.Matches, SearchMatch{Server: m.Tool.Server, Tool: m.Tool.Name,
			ExposedName: s.cat.ExposedName(m.Tool.Server, m.Tool.Name), Description: describe.FirstSentence(m.Tool.Description), Score: m.Score})
	}
	return out, nil
}

// heldTools is srv's tool list as colibri holds it now, nil when it holds
// none: the host's, else the aggregate catalog's, else the pinned one.
func (s *Service) heldTools(srv *registry.Server) []*mcp.Tool {
	if tools := s.opts.Host.KnownTools(srv); tools != nil {
		return tools
	}
	if tools := s.cat.Held(srv); tools != nil {
		return tools
	}
	return s.pinnedTools(srv)
}

// pinnedTools is what srv listed when its tools were pinned (the list
// list_tools shows, offering no capabilities), nil when nothing is pinned or
// the pin file cannot be read.
func (s *Service) pinnedTools(srv *registry.Server) []*mcp.Tool {
	if s.opts.Pins == nil {
		return nil
	}
	defs, err := s.opts.Pins.Definitions(srv.Name)
	if err != nil {
		return nil
	}
	var tools []*mcp.Tool
	for _, d := range defs {
		if d.Caps == pin.NoCaps {
			tools = append(tools, d.Tool)
		}
	}
	return tools
}
