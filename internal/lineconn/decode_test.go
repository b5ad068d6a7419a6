package lineconn

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// DecodeMessage reads every message as go-sdk's jsonrpc.DecodeMessage
// does: the same message, or an error where it errs.
func TestDecodeMessageAsGoSDK(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"m":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`,
		`{"jsonrpc":"2.0","id":"q","error":{"code":-32601,"message":"nope","data":{"k":1}}}`,
		`{"jsonrpc":"2.0","id":2.0,"result":{}}`,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`,
		`{"jsonrpc":"2.0","method":null}`,
		`{"jsonrpc":"2.0","method":5}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`,
		`{"jsonrpc":"2.0","id":[1],"result":{}}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"1.0","id":1,"method":"x"}`,
		`{"id":1,"method":"x"}`,
		`{"JSONRPC":"2.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","ID":1,"Method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}`,
		`{"jsonrpc":"2.0","id":1,"error":null}`,
		`{"jsonrpc":"2.0","id":1e3,"result":{}}`,
		`{"jsonrpc":"2.0","id":-7,"method":"x","extra":true}`,
		`{"jsonrpc":2,"id":1,"method":"x"}`,
		`"a string"`,
		`[1,2]`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\u00e9\ud83d\ude00 [[[["}}`,
	}
	for _, line := range lines {
		want, wantErr := jsonrpc.DecodeMessage([]byte(line))
		got, gotErr := DecodeMessage([]byte(line))
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%.80s: go-sdk's error %v, ours %v", line, wantErr, gotErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		if !reflect.DeepEqual(normal(t, want), normal(t, got)) {
			t.Errorf("%.80s:\n go-sdk %#v\n ours   %#v", line, want, got)
		}
	}
}

// normal is a message with its raw parts compacted and nil and empty raw
// values alike, for comparing.
func normal(t *testing.T, m jsonrpc.Message) any {
	t.Helper()
	raw := func(b json.RawMessage) string { return string(b) }
	switch m := m.(type) {
	case *jsonrpc.Request:
		return [4]any{"request", m.ID, m.Method, raw(m.Params)}
	case *jsonrpc.Response:
		var e any
		if m.Error != nil {
			e = m.Error.Error()
		}
		return [4]any{"response", m.ID, raw(m.Result), e}
	}
	t.Fatalf("message of type %T", m)
	return nil
}
