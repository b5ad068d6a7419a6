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
// checked to be one compact JSON value first (no white space outside
// strings: a CR ends a line for many readers); anything else is encoded by
// the SDK alone, which compacts it.
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
	if stub != nil && compact(payload) && json.Valid(payload) {
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

// compact reports whether b, if it is JSON, has no white space outside its
// strings. String contents are skipped with byte searches.
func compact(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			return false
		case '"':
			for {
				j := bytes.IndexByte(b[i+1:], '"')
				if j < 0 {
					return false // not JSON
				}
				i += 1 + j
				k := i
				for b[k-1] == '\\' {
					k--
				}
				if (i-k)%2 == 0 {
					break // this quote is not escaped: the string ends
				}
			}
		}
	}
	return true
}
