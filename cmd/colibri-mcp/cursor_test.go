package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serve --only answers each list whole and so hands out no cursor: one a
// caller sends is not this instance's, and is refused (−32602), never
// taken for the start of the list (docs/scaling.md).
func TestOnlyRefusesCursorsItDidNotIssue(t *testing.T) {
	t.Parallel()
	o, logs := serveOnly(t, writeRegistry(t, everything(t)), "everything", nil)
	ctx := t.Context()
	all, err := o.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatalf("prompts/list: %v\n%s", err, logs)
	}
	if all.NextCursor != "" || len(all.Prompts) == 0 {
		t.Fatalf("prompts/list: %d prompts, next %q; want them all, no cursor", len(all.Prompts), all.NextCursor)
	}
	for _, cursor := range []string{"x", "other~AAAAAAAAAAAA~AAAAAAAAAAA~AAAAAAAAAAAAAAAAAAAAAA"} {
		_, err := o.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("prompts/list with cursor %q: %v, want −32602", cursor, err)
		} else if cursor == "x" && !strings.Contains(rpc.Message, "invalid cursor") || cursor != "x" && !strings.Contains(rpc.Message, "list again") {
			t.Errorf("prompts/list with cursor %q: %q", cursor, rpc.Message)
		}
	}
}
