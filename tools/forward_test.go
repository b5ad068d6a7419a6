package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// The hosted server receives the arguments exactly as the caller wrote them
// (key order, number spellings), after colibri has checked them against the
// tool's inputSchema: colibri decodes them once, for the check, and forwards
// the caller's bytes (issue 16). Arguments the schema rejects are still
// refused before the call.
func TestArgumentsForwardedAsSent(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}}, "required": []string{"a"}}
	for _, lifecycle := range []string{registry.PerRequest, registry.Persistent} {
		t.Run(lifecycle, func(t *testing.T) {
			srv := listedTools(t, []map[string]any{tool("echo", schema)})
			srv.Name, srv.Lifecycle = "x", lifecycle
			cs := connect(t, newService(t, true, &registry.Registry{Servers: map[string]*registry.Server{"x": srv}}))
			call := func(args string) *mcp.CallToolResult {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.CallToolTool,
					Arguments: json.RawMessage(`{"server":"x","name":"echo","arguments":` + args + `}`)})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			const args = `{"z":[1,{"y":2,"b":1e2}],"a":1.50,"n":12345678901234567890123}`
			res := call(args)
			if got, want := res.Content[0].(*mcp.TextContent).Text, "called echo "+args; res.IsError || got != want {
				t.Fatalf("the hosted server got %q, want %q", got, want)
			}
			if kind := errorKind(t, call(`{"a":"one"}`)); kind != "invalid_arguments" {
				t.Fatalf("arguments the schema rejects: kind %q, want invalid_arguments", kind)
			}
		})
	}
}

// Arguments followed by anything but white space are refused, nothing
// started: the bytes are forwarded as they are, and must be one object.
// (Only the command line can send such bytes: a session's arguments were
// parsed with the message.)
func TestArgumentsOneValue(t *testing.T) {
	srv := listedTools(t, []map[string]any{tool("echo", object)})
	srv.Name = "x"
	svc := newService(t, true, &registry.Registry{Servers: map[string]*registry.Server{"x": srv}})
	_, err := svc.CallTool(t.Context(), "x", "echo", json.RawMessage(`{"a":1} {"b":2}`), nil)
	if d := tools.Detail(err); err == nil || d.Kind != "invalid_arguments" || !strings.HasSuffix(d.Message, ": arguments: invalid JSON: more than one JSON value") {
		t.Fatalf("got %v, want invalid_arguments: arguments: invalid JSON: more than one JSON value", err)
	}
	res, err := svc.CallTool(t.Context(), "x", "echo", json.RawMessage(" {\"a\":1}\n"), nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != `called echo {"a":1}` {
		t.Fatalf("white space around the object: %v %v", res, err)
	}
}

// A key given twice is refused before the call (Go's decoder, and so the
// schema check, keeps the last value; a hosted server's parser may keep the
// first), and a number beyond float64 is checked exactly as it is sent.
func TestArgumentsAmbiguousRefused(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"path": map[string]any{"const": "ok"}, "n": map[string]any{"maximum": 9007199254740992}}}
	srv := listedTools(t, []map[string]any{tool("echo", schema)})
	srv.Name = "x"
	svc := newService(t, true, &registry.Registry{Servers: map[string]*registry.Server{"x": srv}})
	_, err := svc.CallTool(t.Context(), "x", "echo", json.RawMessage(`{"path":"/etc/passwd","path":"ok"}`), nil)
	if err == nil {
		t.Fatal("a key given twice reached the hosted server")
	}
	if d := tools.Detail(err); d.Kind != "invalid_arguments" ||
		!strings.HasSuffix(d.Message, `arguments: key "path" appears more than once (a hosted server may read either value)`) {
		t.Fatalf("got %v, want invalid_arguments: key \"path\" appears more than once", err)
	}
	_, err = svc.CallTool(t.Context(), "x", "echo", json.RawMessage(`{"n":9007199254740993}`), nil)
	if err == nil {
		t.Fatal("2^53+1 passed a maximum of 2^53")
	}
	if d := tools.Detail(err); d.Kind != "invalid_arguments" || !strings.Contains(d.Message, "arguments/n:") {
		t.Fatalf("2^53+1 against a maximum of 2^53: got %v, want invalid_arguments at arguments/n", err)
	}
}
