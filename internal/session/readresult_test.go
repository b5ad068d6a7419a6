package session

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/strict"
)

// resultCorpus are tools/call results good and bad: what servers send, and
// what go-sdk's client refuses.
var resultCorpus = []string{
	`{"content":[{"type":"text","text":"hi"}]}`,
	`{"content":[{"type":"text","text":"no"}],"isError":true}`,
	`{"content":[],"structuredContent":{"a":[1,2]},"_meta":{"k":"v"}}`,
	`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`,
	`{"content":[{"type":"image","data":"not base64!","mimeType":"image/png"}]}`,
	`{"content":[{"type":"audio","data":"aGk=","mimeType":"audio/wav","annotations":{"audience":["user"],"priority":0.5}}]}`,
	`{"content":[{"type":"resource","resource":{"uri":"test://a","text":"x"}}]}`,
	`{"content":[{"type":"resource","resource":{"uri":"test://a","blob":"aGk="}}]}`,
	`{"content":[{"type":"resource","resource":"test://a"}]}`,
	`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","size":3,"icons":[{"src":"https://x/i.png"}]}]}`,
	`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","size":"3"}]}`,
	`{"content":[{"type":"tool_use","id":"1","name":"t","input":{"a":1}}]}`,
	`{"content":[{"type":"tool_result","toolUseId":"1","content":[{"type":"text","text":"r"}]}]}`,
	`{"content":[{"type":"tool_result","toolUseId":"1","content":[{"type":"tool_use","id":"2","name":"t"}]}]}`,
	`{"content":[{"type":"tool_result","toolUseId":"1","content":[null]}]}`,
	`{"content":[{"type":"video"}]}`,
	`{"content":[{"type":"TEXT","text":"hi"}]}`,
	`{"content":[null]}`,
	`{"content":[{"type":"text","text":7}]}`,
	`{"content":{"type":"text","text":"one block, not a list"}}`,
	`{"content":"text"}`,
	`{"content":null}`,
	`{}`,
	`{"Content":[{"type":"video"}]}`,
	`{"content":[{"Type":"video"}]}`,
	`{"isError":"yes","content":[]}`,
	`{"isError":null,"content":[]}`,
	`{"_meta":[],"content":[]}`,
	`{"content":[{"type":"text","text":"a","annotations":{"audience":"user"}}]}`,
	`{"content":[{"type":"text","text":"a","annotations":{"priority":"high"}}]}`,
	`{"resultType":"input_required","inputRequests":{}}`,
	`{"result\u0054ype":"input_required"}`,
	`{"resulttype":"input_required"}`,
	`{"resultType":"complete","content":[]}`,
	`{"resultType":5}`,
	`{"content":[{"type":"text","text":"x"}],"content":[{"type":"video"}]}`,
	`{"content":[{"type":"video"}],"content":[{"type":"text","text":"x"}]}`,
	`{"content":[{"type":"text","text":"\ud800"}]}`,
	`{"content":[{"type":"text","text":"hi"}],"requestState":5}`,
	`{"content":[{"type":"text","text":"hi"}],"inputRequests":5}`,
	`{"content":[{"type":"text","text":"hi"}],"inputRequests":{"a":{"method":"bogus"}}}`,
	`{"content":[{"type":"text","text":"hi"}],"requestState":"s"}`,
}

// sdkRead is go-sdk's client's reading of a result.
func sdkRead(b []byte) (isError, needsInput bool, err error) {
	var r mcp.CallToolResult
	err = r.UnmarshalJSON(b)
	return r.IsError, r.NeedsInput(), err
}

// readBothWays fails t where readCallToolResult and go-sdk's client read b
// differently: one refuses what the other takes, or isError or the ask
// for input differ, or b is whole (relayed as written) and a caller would
// read in it something else than in go-sdk's encoding of what it decoded.
// It reports whether b is whole.
func readBothWays(t *testing.T, b []byte) bool {
	t.Helper()
	gotErr, gotInput, whole, err := readCallToolResult(b)
	wantErr, wantInput, sdkErr := sdkRead(b)
	if (err == nil) != (sdkErr == nil) {
		t.Fatalf("%s: colibri reads it with %v, go-sdk with %v", b, err, sdkErr)
	}
	if err != nil {
		return false
	}
	if gotErr != wantErr || gotInput != wantInput {
		t.Fatalf("%s: colibri reads isError %v, input asked %v; go-sdk %v, %v", b, gotErr, gotInput, wantErr, wantInput)
	}
	if whole {
		var r mcp.CallToolResult
		if err := r.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		enc, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		var relayed, sdk any
		if json.Unmarshal(b, &relayed) != nil || json.Unmarshal(enc, &sdk) != nil {
			t.Fatalf("%s: not JSON both ways (go-sdk's: %s)", b, enc)
		}
		if path, ok := covers(relayed, sdk, "result"); !ok {
			t.Fatalf("%s is relayed as written, but go-sdk's path gives %s: they differ at %s", b, enc, path)
		}
	}
	return whole
}

// covers reports whether a caller reads in got everything it reads in
// want, where got may hold members want does not (what go-sdk does not
// know, and drops); it names the first place they differ.
func covers(got, want any, at string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return at, false
		}
		for k, v := range w {
			if _, ok := g[k]; !ok {
				return at + "." + k + " (missing)", false
			}
			if p, ok := covers(g[k], v, at+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return at, false
		}
		for i := range w {
			if p, ok := covers(g[i], w[i], fmt.Sprintf("%s[%d]", at, i)); !ok {
				return p, false
			}
		}
		return "", true
	case string:
		if g, ok := got.(string); ok && (strings.HasSuffix(at, ".data") || strings.HasSuffix(at, ".blob")) {
			// base64: the bytes are what a caller reads ("aG1=" and go-sdk's
			// "aG0=" are the same two bytes to a decoder).
			gb, gerr := base64.StdEncoding.DecodeString(g)
			wb, werr := base64.StdEncoding.DecodeString(w)
			return at, gerr == nil && werr == nil && bytes.Equal(gb, wb)
		}
		return at, got == want
	default:
		return at, reflect.DeepEqual(got, want)
	}
}

func TestReadCallToolResultAsGoSDK(t *testing.T) {
	refused, whole := 0, 0
	for _, c := range resultCorpus {
		if readBothWays(t, []byte(c)) {
			whole++
		}
		if _, _, err := sdkRead([]byte(c)); err != nil {
			refused++
		}
	}
	if refused < 10 || whole < 8 {
		t.Fatalf("the corpus holds %d results go-sdk refuses and %d relayed as written: it no longer tells the readings apart", refused, whole)
	}
	// What go-sdk reads by normalising it is not relayed as written: a
	// strict client (the TypeScript SDK's schema) refuses a null content,
	// isError: null, structuredContent: null, a text block without text.
	for _, in := range []string{
		`{}`, `{"content":null}`, `{"content":[],"isError":null}`, `{"content":[],"structuredContent":null}`,
		`{"content":[],"_meta":null}`, `{"content":[{"type":"text"}]}`, `{"content":[{"type":"text","text":"x","annotations":null}]}`,
		`{"content":[{"type":"image","data":"aGk="}]}`, `{"content":[{"type":"tool_use","id":"1","name":"t"}]}`,
		`{"content":[{"type":"tool_result","toolUseId":"1"}]}`, `{"content":[{"type":"resource","resource":{"text":"x"}}]}`,
		`{"content":[{"type":"text","text":"hi","annotations":{"lastModified":""}}]}`,
		`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","icons":[{"src":"https://x/i.png","theme":""}]}]}`,
	} {
		if _, _, whole, err := readCallToolResult([]byte(in)); err != nil || whole {
			t.Errorf("%s: read as whole %v (%v), want not whole: go-sdk's path normalises it", in, whole, err)
		}
	}
	// The words of go-sdk's refusals, which the caller reads in the
	// call's failure.
	for in, want := range map[string]string{
		`{"content":[{"type":"video"}]}`: `unrecognized content type "video"`,
		`{"content":[null]}`:             `nil content`,
		`{"content":[{"type":"tool_result","content":[{"type":"tool_use"}]}]}`: `tool_result nested content: invalid content type "tool_use"`,
	} {
		_, _, _, err := readCallToolResult([]byte(in))
		_, _, sdkErr := sdkRead([]byte(in))
		if err == nil || sdkErr == nil || err.Error() != want || sdkErr.Error() != want {
			t.Errorf("%s: colibri says %v, go-sdk %v; want both %q", in, err, sdkErr, want)
		}
	}
}

// FuzzReadCallToolResult reads what the fuzzer makes both ways; make fuzz
// runs it further, make unit its seeds.
func FuzzReadCallToolResult(f *testing.F) {
	for _, c := range resultCorpus {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = bytes.TrimLeft(b, " \t\r\n")
		// What callDirect reads: one JSON object of a line lineconn read,
		// within go-sdk's nesting bound.
		if !json.Valid(b) || len(b) == 0 || b[0] != '{' || bytes.Count(b, []byte("{"))+bytes.Count(b, []byte("[")) > 1000 {
			return
		}
		// A line the strict reading refuses (a key twice, a lone
		// surrogate) or mends never reaches callDirect as it is.
		if fixed, p := strict.Check(append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":`), b...), '}'), strict.FromServer); p != nil || fixed != nil {
			return
		}
		readBothWays(t, b)
	})
}
