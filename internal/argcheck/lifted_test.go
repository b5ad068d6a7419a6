package argcheck

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
)

// A lifted string reaches the check as a bulk.Lifted, a type of its own
// that no JSON schema type matches. It is checked as a string all the same:
// by its reference where the schema reads no string's value (type only),
// and by its value where it does (maxLength). Without Check's conversion,
// the first case is invalid_arguments ("want string").
func TestLiftedStringCheckedAsAString(t *testing.T) {
	table := bulk.New(bulk.DefaultMin)
	c := New(slog.New(slog.DiscardHandler), table)
	long := strings.Repeat("x", 2*bulk.DefaultMin)
	msg, _ := json.Marshal(map[string]any{"params": map[string]any{"arguments": map[string]any{"text": long}}})
	lifted, refs := table.Lift(msg, "params", "arguments")
	if len(refs) != 1 {
		t.Fatalf("lifted %d strings, want 1", len(refs))
	}
	defer table.Release(refs...)
	var call struct {
		Params struct {
			Arguments map[string]any `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(lifted, &call); err != nil {
		t.Fatal(err)
	}
	args := table.Typed(call.Params.Arguments).(map[string]any)
	if _, ok := args["text"].(bulk.Lifted); !ok {
		t.Fatalf("Typed left %T, want bulk.Lifted", args["text"])
	}
	schema := func(s string) *mcp.Tool {
		var v map[string]any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return &mcp.Tool{Name: "write", InputSchema: v}
	}
	if err := c.Check(t.Context(), "s", schema(`{"type":"object","properties":{"text":{"type":"string"}}}`), args); err != nil {
		t.Errorf("type string: %v", err)
	}
	if err := c.Check(t.Context(), "s", schema(`{"type":"object","properties":{"text":{"type":"string","maxLength":10}}}`), args); failure.KindOf(err) != failure.KindInvalidArguments {
		t.Errorf("maxLength 10 on %d bytes: %v, want invalid_arguments", len(long), err)
	}
	if err := c.Check(t.Context(), "s", schema(`{"type":"object","properties":{"text":{"type":"string","minLength":100}}}`), args); err != nil {
		t.Errorf("minLength 100 on %d bytes (the reference is shorter): %v", len(long), err)
	}
}
