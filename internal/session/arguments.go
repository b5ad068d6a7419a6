package session

import "encoding/json"

// Arguments are a call's arguments in both forms colibri needs: Value, the
// decoded JSON object the tool's inputSchema is checked against, and Raw,
// the same object as the caller sent it, which is what the hosted server
// receives. The arguments are decoded once (by whoever builds Arguments)
// and never encoded again: Raw is forwarded as it came, its key order and
// numbers unchanged. Raw must be the encoding of Value. A string lifted
// into Config.Bulk stands in Raw as its reference literal (lowered on the
// way out), and in Value as a bulk.Lifted (bulk.Table.Typed): a value of
// its own type, which no reader can take for the string; the schema check
// resolves it when the schema reads strings' values.
//
//	h.CallTool(ctx, srv, "echo", &session.Arguments{Value: decoded, Raw: raw}, caller)
//	h.CallTool(ctx, srv, "echo", session.ArgumentsOf(map[string]any{"message": "hi"}), nil)
//
// A nil *Arguments is no arguments: {}.
type Arguments struct {
	Value map[string]any
	Raw   json.RawMessage
}

// ArgumentsOf is v as Arguments, encoded once here: for a caller that holds
// no bytes of its own (tests, benchmarks). A value that cannot be encoded
// is sent as {} and checked as v.
func ArgumentsOf(v map[string]any) *Arguments {
	raw, err := json.Marshal(v)
	if err != nil || v == nil {
		raw = nil
	}
	return &Arguments{Value: v, Raw: raw}
}

// Checked is the form of args the schema check reads.
func (a *Arguments) Checked() map[string]any {
	if a == nil || a.Value == nil {
		return map[string]any{}
	}
	return a.Value
}

// sent is the form of args put in tools/call's params.
func (a *Arguments) sent() json.RawMessage {
	if a == nil || len(a.Raw) == 0 {
		return json.RawMessage("{}")
	}
	return a.Raw
}
