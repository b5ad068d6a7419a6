package stdioserve

import (
	"bytes"
	"encoding/json"
	"testing"
)

// member finds the top-level "id" as a decoder does: exact names, the last
// of several, nested ones ignored, values as written.
func FuzzMember(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"params":{"id":2,"x":[{"id":3}]},"id":"a\"}b"}`,
		`{"id":1,"id":2}`,
		`{"ID":1,"Id":2}`,
		`{"\u0069d":4}`,
		` { "id" : [ 1 , { "id" : 5 } ] , "x" : "}" } `,
		`{"a":"\\","id":null}`,
		`{"a":-1.5e+3,"id":true}`,
		`{}`,
		`[{"id":1}]`,
		`"id"`,
		`{"a":{"b":{"c":[[[]]]}},"id":{"n":"\\\""}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		raw, found := member(data, "id")
		var want map[string]json.RawMessage
		if json.Unmarshal(data, &want) != nil {
			if found {
				t.Fatalf("member found %q in %q, which is no object", raw, data)
			}
			return
		}
		w, ok := want["id"]
		if ok != found || !bytes.Equal(raw, w) {
			t.Fatalf("member(%q) = %q, %v; want %q, %v", data, raw, found, w, ok)
		}
	})
}
