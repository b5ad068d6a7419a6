package input

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/tools/describe"
)

// What the schema check sees and what the hosted server is sent agree on
// every input where a parser could read the caller's bytes differently
// from Go (review of issue 16): a key twice, invalid UTF-8 and lone
// surrogates are refused, naming where (docs/protocol.md, "Strict
// reading"); everything else is sent byte for byte.
func TestArgumentsSentMeanWhatWasChecked(t *testing.T) {
	for _, c := range []struct {
		name, in string
		sent     string // "" with err: refused
		err      string
	}{
		{name: "common", in: `{"a":1.50,"z":[1,{"y":"\u00e9\n"}]}`, sent: `{"a":1.50,"z":[1,{"y":"\u00e9\n"}]}`},
		{name: "surrogate pair", in: `{"s":"\ud83d\ude00"}`, sent: `{"s":"\ud83d\ude00"}`},
		{name: "escaped backslash before u", in: `{"s":"\\ud800"}`, sent: `{"s":"\\ud800"}`},
		{name: "escaped quote", in: `{"s":"a\":\"b","t":1}`, sent: `{"s":"a\":\"b","t":1}`},
		{name: "colons in strings", in: `{"s":"a:b:c"}`, sent: `{"s":"a:b:c"}`},
		{name: "NUL", in: `{"s":"\u0000"}`, sent: `{"s":"\u0000"}`},
		{name: "numbers beyond float64", in: `{"n":1e400,"m":9007199254740993}`, sent: `{"n":1e400,"m":9007199254740993}`},
		{name: "null", in: ` null `, sent: ``},
		{name: "empty", in: ``, sent: ``},
		{name: "duplicate key", in: `{"path":"/etc/passwd","path":"ok"}`,
			err: `arguments: key "path" appears more than once (a hosted server may read either value)`},
		{name: "duplicate key, nested", in: `{"a":[0,{"b/c":{"k":1,"k":2}}]}`,
			err: `arguments/a/1/b~1c: key "k" appears more than once (a hosted server may read either value)`},
		{name: "duplicate key, spelled apart", in: `{"a":1,"\u0061":2}`,
			err: `arguments: key "a" appears more than once (a hosted server may read either value)`},
		{name: "lone high surrogate", in: `{"s":"\ud800x"}`, err: "arguments/s: a string holds invalid UTF-8 or an escaped lone surrogate"},
		{name: "lone low surrogate", in: `{"s":"\udc00"}`, err: "arguments/s: a string holds invalid UTF-8 or an escaped lone surrogate"},
		{name: "high then not low", in: `{"s":"\ud800\u0041"}`, err: "arguments/s: a string holds invalid UTF-8 or an escaped lone surrogate"},
		{name: "lone surrogate in a key", in: `{"\udfff":1}`, err: `arguments/\udfff: an object key holds an escaped lone surrogate`},
		{name: "invalid UTF-8", in: "{\"s\":\"a\xffb\"}", err: "arguments/s: a string holds invalid UTF-8 or an escaped lone surrogate"},
		{name: "array", in: `[1]`, err: `arguments: must be a JSON object, got array`},
		{name: "trailing", in: `{} x`, err: `arguments: invalid JSON: more than one JSON value`},
		{name: "BOM", in: "\xef\xbb\xbf{}", err: `arguments: invalid JSON: invalid character 'ï' looking for beginning of value`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, sent, err := Arguments(json.RawMessage(c.in))
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("got %v, want %s", err, c.err)
				}
				return
			}
			if err != nil || string(sent) != c.sent {
				t.Fatalf("sent %q (%v), want %q", sent, err, c.sent)
			}
		})
	}
}

// Arguments that are all one large string are checked for what the server
// could misread without a per-byte walk of the string (the 8 MiB echo).
func BenchmarkDecodeArguments8MiB(b *testing.B) {
	raw := json.RawMessage(`{"message":"` + strings.Repeat("0123456789abcdef", 8<<20/16) + `"}`)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, _, err := Arguments(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// A call's arguments are bounded in values, not only bytes: past MaxValues
// they are refused before they are decoded, for call_tool's arguments and
// for what Own decodes of a tool's own input; at the bound they pass.
func TestArgumentsBoundedInValues(t *testing.T) {
	array := func(n int) json.RawMessage { // {"v":[0,…]}: n+3 values, the key counted
		return json.RawMessage(`{"v":[0` + strings.Repeat(",0", n-1) + `]}`)
	}
	if _, _, err := Arguments(array(MaxValues - 3)); err != nil {
		t.Errorf("%d values: %v", MaxValues, err)
	}
	if _, _, err := Arguments(array(MaxValues - 2)); !errors.Is(err, ErrTooManyValues) {
		t.Errorf("%d values: %v, want ErrTooManyValues", MaxValues+1, err)
	}
	// A member is two values, its key and its value: a key is a decoded
	// string in a map slot, what makes small members cost more than small
	// elements.
	object := func(m int) json.RawMessage { // {"k0":0,…}: 2m+1 values
		var b strings.Builder
		b.WriteString(`{"k0":0`)
		for i := 1; i < m; i++ {
			b.WriteString(`,"k` + strconv.Itoa(i) + `":0`)
		}
		return json.RawMessage(b.String() + "}")
	}
	if _, _, err := Arguments(object(MaxValues/2 - 1)); err != nil {
		t.Errorf("%d members: %v", MaxValues/2-1, err)
	}
	if _, _, err := Arguments(object(MaxValues / 2)); !errors.Is(err, ErrTooManyValues) {
		t.Errorf("%d members (%d values, keys counted): %v, want ErrTooManyValues", MaxValues/2, MaxValues+1, err)
	}
	var in struct{ Server string }
	err := Own(nil, describe.ListToolsTool, json.RawMessage(`{"server":[0`+strings.Repeat(",0", MaxValues)+`]}`), &in)
	if failure.KindOf(err) != failure.KindTooLarge {
		t.Errorf("list_tools with %d values in server: %v, want too_large", MaxValues+1, err)
	}
}
