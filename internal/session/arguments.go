package session

import "encoding/json"

// Arguments are a call's arguments in both forms colibri needs: Value, the
// decoded JSON object the tool's inputSchema is checked against, and Raw,
// the same object as the caller sent it, which is what the hosted server
// receives. The arguments are decoded once (by whoever builds Arguments)
// and never encoded again: Raw is forwarded as it came, its key order and
// numbers unchanged. Raw must be the encoding of Value. Strings lifted
// into Options.Bulk may stand as their references in both: the schema check
// resolves them when the schema reads strings' values.
//
//	h.CallTool(ctx, srv, "echo", &session.Arguments{Value: decoded, Raw: raw}, caller)
//
// CallTool also takes plain decoded arguments (a map[string]any, or nil),
// which the SDK encodes when it sends them.
type Arguments struct {
	Value map[string]any
	Raw   json.RawMessage
}

// Checked is the form of args the schema check reads.
func Checked(args any) any {
	if a, ok := args.(*Arguments); ok {
		if a.Value == nil {
			return map[string]any{}
		}
		return a.Value
	}
	return args
}

// sent is the form of args put in tools/call's params.
func sent(args any) any {
	if a, ok := args.(*Arguments); ok {
		if len(a.Raw) == 0 {
			return json.RawMessage("{}")
		}
		return a.Raw
	}
	return args
}
