package main

import (
	"context"
	"io"

	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/termview"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// cmdDescribe shows one hosted tool as a person reads it: what it does, what
// it declares about itself, and the arguments it takes. With --json it
// prints the list_tools structuredContent for that one tool.
func cmdDescribe(ctx context.Context, s *settings, server, name string, asJSON bool, stdout, stderr io.Writer) error {
	// The command line is a caller too: the policy applies to it.
	ctx = reqctx.WithPrincipal(ctx, reqctx.Stdio)
	stdout, stderr = termview.Safe(stdout), termview.Safe(stderr) // the hosted server's words
	svc, h := newService(s)
	defer h.Close()
	out, err := svc.ListTools(ctx, tools.ListToolsInput{Server: server, Tool: name, Detail: tools.DetailFull}, nil)
	if err != nil {
		return report(err, asJSON, stdout, stderr) // unknown_tool names the closest and the tools it has
	}
	if asJSON {
		termview.JSON(stdout, out)
		return nil
	}
	termview.Tool(stdout, server, out.Servers[0].Tools[0])
	return nil
}
