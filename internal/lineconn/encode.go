package lineconn

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// spliceMin is the size of params or result from which Encode splices them
// in rather than letting the SDK's encoder copy them.
const spliceMin = 32 << 10

// Encode is jsonrpc.EncodeMessage(msg) followed by a newline: one message,
// one line. go-sdk encodes a message's params or result into JSON once
// (jsonrpc.NewCall, NewResponse) and EncodeMessage then copies them again,
// compacting them through a growing buffer. For large params or result,
// Encode has the SDK encode the message around a placeholder and puts the
// bytes in its place, once, in a buffer of the final size. The bytes are
// checked to be one JSON value with no newline first; anything else is
// encoded by the SDK alone, as it was.
func Encode(msg jsonrpc.Message) ([]byte, error) {
	var payload json.RawMessage
	var stub jsonrpc.Message
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if len(m.Params) >= spliceMin {
			c := *m
			c.Params, payload, stub = placeholder, m.Params, &c
		}
	case *jsonrpc.Response:
		if m.Error == nil && len(m.Result) >= spliceMin {
			c := *m
			c.Result, payload, stub = placeholder, m.Result, &c
		}
	}
	if stub != nil && bytes.IndexByte(payload, '\n') < 0 && json.Valid(payload) {
		head, err := jsonrpc.EncodeMessage(stub)
		// The placeholder is the last member the SDK writes (params after
		// method; result with no error).
		if err == nil && bytes.HasSuffix(head, placeholderEnd) {
			head = head[:len(head)-len(placeholderEnd)+1] // up to and with ':'
			out := make([]byte, 0, len(head)+len(payload)+2)
			out = append(out, head...)
			out = append(out, payload...)
			return append(out, '}', '\n'), nil
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

var (
	placeholder    = json.RawMessage("0")
	placeholderEnd = []byte(":0}")
)
