package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/schema"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools/describe"
)

// CallTool is call_tool's input. Own fills it in as far as the input
// names a server, tool and arguments even when it then refuses the input
// (an unknown key, arguments that are not an object): a call's record
// names what it was asked, from this one decode.
type CallTool struct {
	Server    string          `json:"server"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// fromMembers fills in the input from its members, which Own has
// already split out: "arguments" (which may be megabytes) is taken as it
// is, not copied and scanned again by a second decode. A member of the
// wrong type is left zero, and the first such is the error; once the
// schema check has passed there is none.
func (in *CallTool) fromMembers(top map[string]json.RawMessage) error {
	var first error
	for k, v := range top {
		var err error
		switch k {
		case "server":
			err = json.Unmarshal(v, &in.Server)
		case "name":
			err = json.Unmarshal(v, &in.Name)
		case "arguments":
			in.Arguments = v
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// inputSchemas are the three tools' input schemas, compiled once: colibri
// checks its own inputs against exactly what it advertises.
var inputSchemas = func() map[string]*jsonschema.Schema {
	m := map[string]*jsonschema.Schema{}
	for _, t := range describe.Tools(describe.View{}) {
		raw := t.InputSchema.(json.RawMessage)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			panic(fmt.Sprintf("tools/input: %s: input schema: %v", t.Name, err))
		}
		c := jsonschema.NewCompiler()
		url := "colibri:///" + t.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			panic(fmt.Sprintf("tools/input: %s: input schema: %v", t.Name, err))
		}
		m[t.Name] = c.MustCompile(url)
	}
	return m
}()

// Own checks a tool's own arguments against its input schema (an
// unknown key, a wrong type or a missing key is invalid_arguments naming the
// JSON location), then decodes them into v.
//
// Strings lifted into the bulk table (internal/bulk) are read as they came,
// except in an opaque property, which is forwarded as it is.
func Own(table *bulk.Table, tool string, raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if opaque[tool] == "" {
		raw = table.Flatten(raw)
	}
	invalid := func(msg string) error {
		return &failure.Error{Kind: failure.KindInvalidArguments, Err: fmt.Errorf("%s: arguments: %s", tool, msg)}
	}
	doc, top, err := ownDoc(table, tool, raw)
	if errors.Is(err, ErrTooManyValues) {
		return &failure.Error{Kind: failure.KindTooLarge, Err: fmt.Errorf("%s: %w", tool, err)}
	}
	if err != nil {
		return invalid("invalid JSON: " + err.Error())
	}
	if m, ok := doc.(map[string]any); ok {
		// A null optional key ("arguments": null, as some clients send for
		// "no arguments") is taken as absent.
		for k, v := range m {
			if v == nil {
				delete(m, k)
			}
		}
	}
	members, split := v.(interface {
		fromMembers(map[string]json.RawMessage) error
	})
	split = split && top != nil
	var memberErr error
	if split {
		memberErr = members.fromMembers(top) // before the check: see CallTool
	}
	if err := inputSchemas[tool].Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return invalid(err.Error())
		}
		var msgs []string
		for _, p := range registry.SchemaProblems(ve) {
			msgs = append(msgs, p.String())
		}
		return invalid(strings.Join(msgs, "; "))
	}
	if split {
		if memberErr != nil {
			return invalid(memberErr.Error()) // cannot happen once the schema passed
		}
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalid(err.Error()) // cannot happen once the schema passed
	}
	return nil
}

// opaque names the property of a tool's own input whose content colibri's
// schema leaves open (call_tool's "arguments": any object). Its content is
// the hosted tool's, checked against that tool's inputSchema, which decodes
// it: colibri's own check only needs to know that it is an object, and does
// not decode what may be megabytes a second time.
var opaque = map[string]string{describe.CallToolTool: "arguments"}

// ownDoc decodes a tool's own input for its schema check; an opaque property
// that holds an object stands in as an empty one. For a tool with an opaque
// property it also returns the input's members as they came. What it
// decodes is bounded in values as Arguments is (ErrTooManyValues).
func ownDoc(table *bulk.Table, tool string, raw json.RawMessage) (any, map[string]json.RawMessage, error) {
	key := opaque[tool]
	if trimmed := bytes.TrimLeft(raw, " \t\r\n"); key == "" || len(trimmed) == 0 || trimmed[0] != '{' {
		if _, _, values := scanArguments(raw); values > MaxValues {
			return nil, nil, tooManyValues("arguments", values)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		return doc, nil, err
	}
	var top map[string]json.RawMessage // checks the whole input is JSON
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, nil, err
	}
	doc := make(map[string]any, len(top))
	for k, v := range top {
		if k == key && len(v) > 0 && v[0] == '{' {
			doc[k] = map[string]any{}
			continue
		}
		v = table.Flatten(v)
		top[k] = v
		if _, _, values := scanArguments(v); values > MaxValues {
			return nil, nil, tooManyValues("arguments/"+schema.EscapePointer(k), values)
		}
		x, err := jsonschema.UnmarshalJSON(bytes.NewReader(v))
		if err != nil {
			return nil, nil, err
		}
		doc[k] = x
	}
	return doc, top, nil
}
