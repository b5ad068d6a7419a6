package argcheck

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
)

// A schema that refers to a JSON Schema meta-schema (which the compiler
// holds, and which internal/schema's no-loader lets through) has the
// meta-schema's keywords too: "pattern" on "$id" and "$anchor", formats in
// draft-07. A lifted string must then be checked as its value, not as its
// reference (which matches "^[A-Za-z_][-A-Za-z0-9._]*$").
func TestSchemaCheckThroughMetaSchemaReadsValues(t *testing.T) {
	table := bulk.New(bulk.DefaultMin)
	c := New(slog.New(slog.DiscardHandler), table)

	bad := "not an anchor " + strings.Repeat("x", bulk.DefaultMin) // a space: fails $anchor's pattern
	msg, _ := json.Marshal(map[string]any{"params": map[string]any{"arguments": map[string]any{"$anchor": bad}}})
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

	for _, ref := range []string{
		"https://json-schema.org/draft/2020-12/schema",
		"https://json-schema.org/draft/2020-12/meta/core",
		"http://json-schema.org/draft/2019-09/meta/core#",
	} {
		var schema map[string]any
		if err := json.Unmarshal([]byte(`{"type":"object","$ref":"`+ref+`"}`), &schema); err != nil {
			t.Fatal(err)
		}
		tool := &mcp.Tool{Name: "t", InputSchema: schema}
		err := c.Check(context.Background(), "s", tool, call.Params.Arguments)
		if failure.KindOf(err) != failure.KindInvalidArguments || !strings.Contains(err.Error(), "arguments/$anchor") {
			t.Errorf("$ref %s: check of a lifted $anchor that fails the meta-schema's pattern: %v, want %s at arguments/$anchor", ref, err, failure.KindInvalidArguments)
		}
		// The value itself fails, as a control.
		if err := c.Check(context.Background(), "s", tool, map[string]any{"$anchor": bad}); failure.KindOf(err) != failure.KindInvalidArguments {
			t.Fatalf("$ref %s: the value itself: %v, want %s", ref, err, failure.KindInvalidArguments)
		}
	}
}
