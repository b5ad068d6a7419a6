package tools_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// A tools/list cursor is its instance's (docs/scaling.md): two instances
// with the same registry each page their own list; the other's cursor, or
// one from before a restart, is −32602 "list again"; a forged cursor, or
// go-sdk's own unsealed form, is refused as invalid (−32602).
func TestCursorsAreTheInstances(t *testing.T) {
	var many []map[string]any
	for i := range 1100 { // past go-sdk's page of 1,000
		many = append(many, tool(fmt.Sprintf("t%04d", i), map[string]any{"type": "object"}))
	}
	reg := newLive(map[string]*registry.Server{"many": listedTools(t, many)})
	svc := func(name string) *mcp.ClientSession {
		return connect(t, newLiveService(t, reg, serviceOpts{aggregate: true, poll: -1, instance: name}))
	}
	a, b, restarted := svc("a"), svc("b"), svc("a")
	list := func(cs *mcp.ClientSession, cursor string) (*mcp.ListToolsResult, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		return cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
	}
	first, err := list(a, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.NextCursor, "a~") {
		t.Fatalf("instance a's cursor %q is not sealed as a's", first.NextCursor)
	}
	second, err := list(a, first.NextCursor)
	if err != nil {
		t.Fatalf("instance a's next page: %v", err)
	}
	if got := len(first.Tools) + len(second.Tools); got != 1103 || second.NextCursor != "" {
		t.Errorf("two pages of %d tools (next %q), want 1,100 and colibri's three", got, second.NextCursor)
	}

	code := func(err error) (int64, string) {
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) {
			return 0, fmt.Sprint(err)
		}
		return rpc.Code, rpc.Message
	}
	for _, c := range []struct {
		name   string
		cs     *mcp.ClientSession
		cursor string
		want   string
	}{
		{"another instance", b, first.NextCursor, "list again"},
		{"a restart", restarted, first.NextCursor, "list again"},
		{"forged", a, first.NextCursor[:len(first.NextCursor)-4] + "AAAA", "invalid cursor"},
		{"go-sdk's own form", a, "In8DAQEJcGFnZVRva2VuAf-AAAEBAQdMYXN0VUlEAQwAAAAQ_4ABC21hbnlfX3QwOTk2AA==", "invalid cursor"},
	} {
		_, err := list(c.cs, c.cursor)
		if n, msg := code(err); n != jsonrpc.CodeInvalidParams || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q, want −32602 %q", c.name, n, msg, c.want)
		}
	}
	// Refused, the session goes on: listing again from the start works.
	if _, err := list(b, ""); err != nil {
		t.Errorf("listing again from the start: %v", err)
	}
}
