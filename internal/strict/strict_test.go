package strict

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		side    Side
		msg     string
		pointer string // "" accepts
		params  bool
	}{
		{"a call", FromCaller, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"Name":"x","name":"y"},"_meta":{"progressToken":7}}}`, "", false},
		{"params before method", FromCaller, `{"params":{"name":"echo"},"jsonrpc":"2.0","method":"tools/call","id":"a"}`, "", false},
		{"an unknown method's params", FromCaller, `{"jsonrpc":"2.0","id":1,"method":"x/y","params":{"Anything":1,"anything":2}}`, "", false},
		{"key twice in the envelope", FromCaller, `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, "/id", false},
		{"key twice, escaped", FromCaller, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","n\u0061me":"b"}}`, "/params/name", true},
		{"key twice in _meta", FromCaller, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":1,"x":2}}}`, "/params/_meta/x", true},
		{"case variant of name", FromCaller, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"rm"}}`, "/params/Name", true},
		{"case variant beside name", FromCaller, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ls","NAME":"rm"}}`, "/params/NAME", true},
		{"long s folds to s", FromServer, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","deſcription":"x","inputSchema":{"type":"object"}}]}}`, "/result/tools/0/deſcription", true},
		{"NUL-suffixed key", FromCaller, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name\u0000x":"rm"}}`, "/params/name\x00x", true},
		{"an escaped method key still names the params' shape", FromCaller, `{"jsonrpc":"2.0","id":1,"\u006dethod":"tools/call","params":{"name":"ls","Name":"rm"}}`, "/params/Name", true},
		{"an escaped method key in a batch", FromCaller, `[{"jsonrpc":"2.0","id":1,"m\u0065thod":"tools/call","params":{"Name":"rm"}}]`, "/0/params/Name", true},
		{"_meta's keys are anyone's, case and all", FromCaller, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"ProgressToken":"x","progressToken":7}}}`, "", false},
		{"_meta's progress token is still an integer", FromCaller, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":1.5}}}`, "/params/_meta/progressToken", true},
		{"case variant of method", FromCaller, `{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`, "/Method", false},
		{"case inside a schema is the schema's", FromServer, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object","properties":{"Type":{},"type":{}}}}]}}`, "", false},
		{"key twice inside a schema", FromServer, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object","type":"string"}}]}}`, "/result/tools/0/inputSchema/type", true},
		{"case variant in a tool's annotations", FromServer, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","annotations":{"readonlyHint":true}}]}}`, "/result/tools/0/annotations/readonlyHint", true},
		{"case variant of isError", FromServer, `{"jsonrpc":"2.0","id":1,"result":{"content":[],"IsError":true}}`, "/result/IsError", true},
		{"structuredContent is the tool's", FromServer, `{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"Content":1,"content":2}}}`, "", false},
		{"invalid UTF-8 in a method", FromCaller, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/\xffcall\"}", "/method", false},
		{"lone surrogate in a name", FromCaller, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\ud800"}}`, "/params/name", true},
		{"a surrogate pair is fine", FromCaller, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\ud83d\ude00"}}`, "", false},
		{"lone low surrogate in a key", FromCaller, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"\udc00":1}}}`, "/params/_meta/\\udc00", true},
		{"fractional id", FromCaller, `{"jsonrpc":"2.0","id":1.0,"method":"ping"}`, "/id", false},
		{"id with an exponent", FromCaller, `{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, "/id", false},
		{"id beyond 2^53", FromCaller, `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, "/id", false},
		{"id at 2^53-1", FromCaller, `{"jsonrpc":"2.0","id":-9007199254740991,"method":"ping"}`, "", false},
		{"a progress token beyond 2^53", FromServer, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":18446744073709551616,"progress":1}}`, "/params/progressToken", true},
		{"fractional progress is MCP's", FromServer, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":0.5,"total":1}}`, "", false},
		{"a number out of range", FromServer, `{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"n":1e400}}}`, "/result/structuredContent/n", true},
		{"an error code with a fraction", FromServer, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600.5,"message":"x"}}`, "/error/code", true},
		{"an elicitation's form values are the form's", FromCaller, `{"jsonrpc":"2.0","id":3,"result":{"action":"accept","content":{"Title":"Dr","Type":"x"}}}`, "", false},
		{"a batch's message", FromCaller, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"Name":"rm"}}]`, "/1/params/Name", true},
		{"a clean batch", FromCaller, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ls"}}]`, "", false},
		{"deep nesting within the decoders' bound", FromServer, `{"jsonrpc":"2.0","id":1,"result":{"structuredContent":` + strings.Repeat("[", maxDepth-8) + strings.Repeat("]", maxDepth-8) + `}}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !json.Valid([]byte(tc.msg)) {
				t.Fatalf("the test's message is not JSON")
			}
			_, p := Check([]byte(tc.msg), tc.side)
			switch {
			case tc.pointer == "" && p != nil:
				t.Fatalf("refused: %v", p)
			case tc.pointer != "" && p == nil:
				t.Fatalf("accepted; want a refusal at %s", tc.pointer)
			case p != nil && (p.Pointer != tc.pointer || p.InParams != tc.params):
				t.Fatalf("refused at %q (params %v): %v; want %q (params %v)", p.Pointer, p.InParams, p, tc.pointer, tc.params)
			}
		})
	}
}

// A caller's tools/call arguments are the call's own check's (tools/input
// answers invalid_arguments naming the location); a hosted server's
// requests have no such check behind them.
func TestCallerArgumentsAreLeftToTheCall(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"k":1,"k":2}}}`
	if _, p := Check([]byte(msg), FromCaller); p != nil {
		t.Fatalf("caller: %v", p)
	}
	if _, p := Check([]byte(msg), FromServer); p == nil || p.Pointer != "/params/arguments/k" {
		t.Fatalf("server: %v; want a refusal at /params/arguments/k", p)
	}
}

func TestHostedTextIsRepaired(t *testing.T) {
	msg := "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\xffb\\ud800c\\ud83d\\ude00\"}]}}"
	fixed, p := Check([]byte(msg), FromServer)
	if p != nil {
		t.Fatalf("refused: %v", p)
	}
	want := "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\uFFFDb\\ufffdc\\ud83d\\ude00\"}]}}"
	if string(fixed) != want {
		t.Fatalf("repaired:\n%q\nwant\n%q", fixed, want)
	}
	if _, p := Check(fixed, FromServer); p != nil {
		t.Fatalf("the repaired message is refused: %v", p)
	}
	// A caller's text is not repaired: it is refused.
	if _, p := Check([]byte(msg), FromCaller); p == nil {
		t.Fatal("a caller's invalid text was accepted")
	}
	// Nor is a name in a hosted result.
	bad := "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"a\xff\"}]}}"
	if _, p := Check([]byte(bad), FromServer); p == nil || p.Pointer != "/result/tools/0/name" {
		t.Fatalf("a hosted tool name with invalid UTF-8: %v", p)
	}
}

func TestNotAnObjectIsLeftToTheReader(t *testing.T) {
	for _, msg := range []string{`[]`, `1`, ``, `"x"`} {
		if fixed, p := Check([]byte(msg), FromCaller); p != nil || fixed != nil {
			t.Fatalf("%q: %v %q", msg, p, fixed)
		}
	}
}

// Invalid JSON never panics the walker, whatever it is cut at.
func TestTruncatedNeverPanics(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\u00e9","arguments":{"x":[1,2,{"y":"\ud83d\ude00"}]},"_meta":{"progressToken":"p"}}}`
	for i := range len(msg) {
		Check([]byte(msg[:i]), FromCaller)
		Check([]byte(msg[:i]), FromServer)
	}
}

func TestValue(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":[1,{"b":"x"}],"n":1e400}`: "",
		`{"a":[1,{"b":"x\ud800"}]}`:     "/a/1/b",
		"{\"a\":{\"b\xff\":1}}":         "/a/b\xff",
		`{"k":{"x":1,"x":2}}`:           "/k/x",
		`"\udc00"`:                      "",
	} {
		p := Value([]byte(in))
		switch {
		case want == "" && p != nil && in != `"\udc00"`:
			t.Errorf("%s: %v", in, p)
		case want != "" && (p == nil || p.Pointer != want):
			t.Errorf("%s: %v, want a problem at %s", in, p, want)
		}
	}
	if p := Value([]byte(`"\udc00"`)); p == nil || p.Pointer != "" {
		t.Errorf("a lone surrogate at the top: %v", p)
	}
}

// A refusal names its place in a bounded number of bytes, whatever the
// message holds: a key of megabytes (twice, or a case variant), or nesting
// 10,000 deep. (Its error goes back to the caller and into a log line.)
func TestProblemIsBounded(t *testing.T) {
	big := strings.Repeat("é", 1<<20)
	for name, msg := range map[string]string{
		"a huge key twice":    `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"` + big + `":1,"` + big + `":2}}}`,
		"a huge case variant": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name\u0000` + big + `":"x"}}`,
		"deep huge keys":      `{"jsonrpc":"2.0","id":1,"result":{"structuredContent":` + strings.Repeat(`{"`+strings.Repeat("k", 100)+`":`, maxDepth+1) + `1` + strings.Repeat(`}`, maxDepth+1) + `}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, p := Check([]byte(msg), FromCaller)
			if p == nil {
				t.Fatal("accepted")
			}
			if e := p.Error(); len(e) > 2048 || !utf8.ValidString(e) {
				t.Fatalf("the problem is %d bytes (valid UTF-8: %v): %.200s…", len(e), utf8.ValidString(e), e)
			}
		})
	}
}
