package lineconn

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Encode writes exactly what go-sdk's EncodeMessage writes, plus a newline,
// whether it splices (large params or result) or not.
func TestEncodeIsTheSDKs(t *testing.T) {
	big := `{"name":"echo","arguments":{"message":"` + strings.Repeat("x<&>\\u00e9", spliceMin/8) + `"}}`
	id, _ := jsonrpc.MakeID(float64(7))
	sid, _ := jsonrpc.MakeID("s-1")
	for _, tc := range []struct {
		name   string
		msg    jsonrpc.Message
		splice bool
	}{
		{"small call", &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{"name":"echo"}`)}, false},
		{"big call", &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(big)}, true},
		{"big notification", &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(big)}, true},
		{"big result", &jsonrpc.Response{ID: sid, Result: json.RawMessage(big)}, true},
		{"error", &jsonrpc.Response{ID: sid, Error: &jsonrpc.Error{Code: -32600, Message: "no"}}, false},
		{"big result with error", &jsonrpc.Response{ID: sid, Result: json.RawMessage(big), Error: &jsonrpc.Error{Code: 1, Message: "x"}}, false},
		{"big params with a newline", &jsonrpc.Request{ID: id, Method: "x", Params: json.RawMessage(strings.Replace(big, ":", ":\n", 1))}, false},
		// A lone CR ends a line for many readers (Python's universal
		// newlines): white space of any kind is compacted away, as the SDK does.
		{"big params with a carriage return", &jsonrpc.Request{ID: id, Method: "x", Params: json.RawMessage(strings.Replace(big, ":", ":\r", 1))}, false},
		{"big result with spaces and tabs", &jsonrpc.Response{ID: sid, Result: json.RawMessage(strings.Replace(big, ":", " :\t", 1))}, false},
		{"big result with a space at the end", &jsonrpc.Response{ID: sid, Result: json.RawMessage(big + " ")}, false},
		{"big result, quotes and spaces in strings", &jsonrpc.Response{ID: sid, Result: json.RawMessage(`{"a":"x \\\" y","b":"` + strings.Repeat(" ", spliceMin) + `"}`)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := jsonrpc.EncodeMessage(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Encode(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append(want, '\n')) {
				t.Fatalf("Encode differs from EncodeMessage:\ngot  %.200q\nwant %.200q", got, want)
			}
			if n := bytes.Count(got, []byte("\n")); n != 1 {
				t.Fatalf("%d newlines, want 1", n)
			}
		})
	}
}

// Bytes that are not one JSON value are never spliced in: the SDK's
// encoder refuses them, and Encode with it.
func TestEncodeRefusesInvalidPayload(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(1))
	bad := json.RawMessage(`{"a":"` + strings.Repeat("x", spliceMin) + `"} {`)
	if got, err := Encode(&jsonrpc.Request{ID: id, Method: "x", Params: bad}); err == nil {
		t.Fatalf("Encode wrote %.100q, want an error", got)
	}
}
