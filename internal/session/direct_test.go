package session

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answering is a Direct whose every call answers result.
type answering string

func (a answering) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(a), nil
}

// A result relayed below go-sdk is read as go-sdk's client reads it: what
// the client refuses fails, a result asking for input of a session offered
// no capability fails, and the rest is relayed as written with its isError.
func TestCallDirectReadsAsTheClient(t *testing.T) {
	for _, c := range []struct {
		name, result, fails string
		isError             bool
	}{
		{"plain", `{"content":[{"type":"text","text":"hi"}]}`, "", false},
		{"tool error", `{"content":[{"type":"text","text":"no"}],"isError":true}`, "", true},
		{"complete", `{"content":[],"resultType":"complete"}`, "", false},
		{"the word in a text", `{"content":[{"type":"text","text":"resultType: input_required"}]}`, "", false},
		{"input asked", `{"resultType":"input_required","inputRequests":{}}`, `resultType "input_required"`, false},
		{"another type", `{"content":[],"resultType":"later"}`, `resultType "later"`, false},
		{"another type, other case", `{"content":[],"RESULTTYPE":"later"}`, `resultType "later"`, false},
		{"an escaped key asking input", `{"result\u0054ype":"input_required"}`, `resultType "input_required"`, false},
		{"a block of no type MCP has", `{"content":[{"type":"video"}]}`, "calling", false},
		{"text not a string", `{"content":[{"type":"text","text":7}]}`, "calling", false},
		{"not an object", `[1]`, "not a JSON object", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Session{direct: answering(c.result)}
			raw := &Raw{}
			res, err := s.callDirect(t.Context(), raw, &mcp.CallToolParams{Name: "t"})
			if c.fails != "" {
				if err == nil || !strings.Contains(err.Error(), c.fails) {
					t.Fatalf("err = %v, want one saying %q", err, c.fails)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != c.isError || string(raw.Of(res)) != c.result {
				t.Errorf("isError %v, relayed %s; want %v and the bytes as written", res.IsError, raw.Of(res), c.isError)
			}
		})
	}
}

func TestMayHaveResultType(t *testing.T) {
	for in, want := range map[string]bool{
		`{"content":[]}`:                 false,
		`{"resultType":"complete"}`:      true,
		`{"x":"ResultTYPE"}`:             true,
		`{"rrr":"resultTyp"}`:            false,
		`resulttype`:                     true,
		`{"r":1,"result":{"type":"x"}}`:  false,
		`{"content":[],"resultType":""}`: true,
	} {
		if got := mayHaveResultType([]byte(in)); got != want {
			t.Errorf("mayHaveResultType(%s) = %v, want %v", in, got, want)
		}
	}
}
