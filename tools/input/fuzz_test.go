package input

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/tools/describe"
)

// FuzzCallArguments: whatever a model sends to call-tool, colibri's own
// decoding either yields a JSON object for the hosted tool (re-encodable,
// numbers kept exact) or an invalid_arguments error; never a panic.
func FuzzCallArguments(f *testing.F) {
	f.Add(`{"server":"demo","name":"echo","arguments":{"message":"hi"}}`)
	f.Add(`{"server":"demo","name":"add","arguments":{"a":1e400,"b":-0.0000000000000000001}}`)
	f.Add(`{"server":"demo","name":"x","arguments":[1,2]}`)
	f.Add(`{"server":1}`)
	f.Add(`{"server":"a","name":"b","extra":true}`)
	f.Add(`null`)
	f.Add(`{"server":"a","name":"b","arguments":"{}"}`)
	f.Add(`{"name":"b","server":"a","arguments":null,"name":"c"}`)
	f.Add(`{"server":"","Arguments":null,"name":""}`) // keys match exactly: Arguments is not arguments
	f.Add(`{"server":"\u00e9","name":"b","arguments":{ "x" : [ 1 ] }}`)
	f.Add(`{"server":"a","name":"b","arguments":{"p":"ok","q":{"p":1,"p":2}}}`)
	f.Add("{\"server\":\"a\",\"name\":\"b\",\"arguments\":{\"s\":\"\xff\\ud800\\\\ud800\\\"\\ud83d\\ude00:\"}}")
	f.Fuzz(func(t *testing.T, raw string) {
		var in CallTool
		err := Own(nil, describe.CallToolTool, json.RawMessage(raw), &in)
		if full := acceptsFully(raw); (err == nil) != full {
			t.Fatalf("Own: %v, but a full decode accepts: %v", err, full)
		}
		if err != nil {
			if failure.KindOf(err) != failure.KindInvalidArguments {
				t.Fatalf("Own: kind %s: %v", failure.KindOf(err), err)
			}
			return
		}
		// The members taken as they came are what a decode of the whole
		// input gives, with keys matched exactly, as go-sdk matches them
		// (encoding/json alone would also take "Arguments" for arguments).
		var want CallTool
		if raw != "" && raw != "null" {
			var members map[string]json.RawMessage
			if err := json.Unmarshal([]byte(raw), &members); err != nil {
				t.Fatal(err)
			}
			for key, dst := range map[string]any{"server": &want.Server, "name": &want.Name, "arguments": &want.Arguments} {
				if m, ok := members[key]; ok {
					if err := json.Unmarshal(m, dst); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if in.Server != want.Server || in.Name != want.Name || string(in.Arguments) != string(want.Arguments) {
			t.Fatalf("Own gave %+v, a full decode %+v", in, want)
		}
		args, sent, err := Arguments(in.Arguments)
		if err != nil {
			return
		}
		if args == nil {
			t.Fatal("nil arguments for an accepted call")
		}
		if _, err := json.Marshal(args); err != nil {
			t.Fatalf("accepted arguments do not re-encode: %v", err)
		}
		// What the hosted server is sent can mean only what was checked:
		// valid UTF-8, no lone surrogate, no key twice, and it decodes to
		// the checked value.
		if sent == nil {
			sent = json.RawMessage("{}")
		}
		n, lone, values := scanArguments(sent)
		if !utf8.Valid(sent) || lone || n != members(args) {
			t.Fatalf("sent %q: valid UTF-8 %v, lone surrogate %v, %d members for %d", sent, utf8.Valid(sent), lone, n, members(args))
		}
		// The bound on values counts at least what the decoder makes.
		if decoded := valuesOf(args); values < decoded {
			t.Fatalf("sent %q: scanned %d values, decoded %d", sent, values, decoded)
		}
		again, _, err := Arguments(sent)
		if err != nil || !reflect.DeepEqual(again, args) {
			t.Fatalf("sent %q decodes to %v (%v), checked %v", sent, again, err, args)
		}
	})
}

// valuesOf counts the values in v, v included.
func valuesOf(v any) int {
	n := 1
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			n += valuesOf(e)
		}
	case []any:
		for _, e := range x {
			n += valuesOf(e)
		}
	}
	return n
}

// acceptsFully is Own's check of a call_tool input without its
// shortcut: the whole input decoded, arguments and all.
func acceptsFully(raw string) bool {
	if raw == "" || raw == "null" {
		raw = "{}"
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
	if err != nil {
		return false
	}
	if m, ok := doc.(map[string]any); ok {
		for k, v := range m {
			if v == nil {
				delete(m, k)
			}
		}
	}
	return inputSchemas[describe.CallToolTool].Validate(doc) == nil
}

func TestDecodeInput(t *testing.T) {
	var in struct {
		Server    string          `json:"server"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	for raw, wantErr := range map[string]string{
		`{"server":"a","name":"b"}`:                   "",
		`{"server":"a","name":"b","arguments":null}`:  "",
		`{"server":"a","name":"b","arguments":{}}`:    "",
		`{"server":"a","name":"b","arguments":[]}`:    "/arguments: got array, want object",
		`{"server":"a"}`:                              "/: missing property 'name'",
		`{"server":3,"name":"b"}`:                     "/server: got number, want string",
		`{"server":"a","name":"b","extra":1}`:         `unknown key "extra"`,
		`{"server":"a","name":"b","arguments":{"x"}}`: "invalid JSON",
	} {
		err := Own(nil, describe.CallToolTool, json.RawMessage(raw), &in)
		switch {
		case wantErr == "" && err != nil:
			t.Errorf("%s: %v", raw, err)
		case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr) || failure.KindOf(err) != failure.KindInvalidArguments):
			t.Errorf("%s: %v, want invalid_arguments saying %q", raw, err, wantErr)
		}
	}
}
