package session

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
}

// sdkRead is go-sdk's client's reading of a result.
func sdkRead(b []byte) (isError, needsInput bool, err error) {
	var r mcp.CallToolResult
	err = r.UnmarshalJSON(b)
	return r.IsError, r.NeedsInput(), err
}

// readBothWays fails t where readCallToolResult and go-sdk's client read b
// differently: one refuses what the other takes, or isError or the ask
// for input differ.
func readBothWays(t *testing.T, b []byte) {
	t.Helper()
	gotErr, gotInput, err := readCallToolResult(b)
	wantErr, wantInput, sdkErr := sdkRead(b)
	if (err == nil) != (sdkErr == nil) {
		t.Fatalf("%s: colibri reads it with %v, go-sdk with %v", b, err, sdkErr)
	}
	if err == nil && (gotErr != wantErr || gotInput != wantInput) {
		t.Fatalf("%s: colibri reads isError %v, input asked %v; go-sdk %v, %v", b, gotErr, gotInput, wantErr, wantInput)
	}
}

func TestReadCallToolResultAsGoSDK(t *testing.T) {
	refused := 0
	for _, c := range resultCorpus {
		readBothWays(t, []byte(c))
		if _, _, err := sdkRead([]byte(c)); err != nil {
			refused++
		}
	}
	if refused < 10 {
		t.Fatalf("the corpus holds %d results go-sdk refuses: it no longer tells the two readings apart", refused)
	}
	// The words of go-sdk's refusals, which the caller reads in the
	// call's failure.
	for in, want := range map[string]string{
		`{"content":[{"type":"video"}]}`: `unrecognized content type "video"`,
		`{"content":[null]}`:             `nil content`,
		`{"content":[{"type":"tool_result","content":[{"type":"tool_use"}]}]}`: `tool_result nested content: invalid content type "tool_use"`,
	} {
		_, _, err := readCallToolResult([]byte(in))
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
		readBothWays(t, b)
	})
}
