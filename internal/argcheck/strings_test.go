package argcheck

import (
	"encoding/json"
	"testing"
)

// A schema reads strings' values when any of its keywords that can tell
// one string from another appears anywhere in it; then, and only then, the
// check resolves the references of lifted strings (a copy of each).
func TestReadsStrings(t *testing.T) {
	decode := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		schema string
		reads  bool
	}{
		{`{"type":"object","properties":{"message":{"type":"string","description":"Message to echo"}},"required":["message"]}`, false},
		{`{"type":"object","additionalProperties":false,"properties":{"n":{"type":"integer","minimum":1}}}`, false},
		{`{"type":"object","properties":{"m":{"type":"string","maxLength":10}}}`, true},
		{`{"type":"object","properties":{"m":{"type":"string","minLength":1}}}`, true},
		{`{"type":"object","properties":{"m":{"anyOf":[{"pattern":"^a"},{"type":"null"}]}}}`, true},
		{`{"type":"object","properties":{"m":{"format":"email"}}}`, true},
		{`{"type":"object","properties":{"m":{"enum":["a","b"]}}}`, true},
		{`{"type":"object","properties":{"m":{"items":[{"const":"x"}]}}}`, true},
		{`{"type":"object","properties":{"m":{"type":"array","uniqueItems":true}}}`, true},
		{`{"type":"object","properties":{"m":{"contentMediaType":"application/json"}}}`, true},
		{`{"$defs":{"s":{"maxLength":3}},"properties":{"m":{"$ref":"#/$defs/s"}}}`, true},
		{`{"type":"object","properties":{"pattern":{"type":"string"}}}`, true}, // a property's name: counted, harmlessly
		{`{"$defs":{"s":{"type":"string"}},"properties":{"m":{"$ref":"#/$defs/s"}}}`, false},
		{`{"type":"object","$ref":"https://json-schema.org/draft/2020-12/schema"}`, true}, // a meta-schema: "pattern" on "$anchor"
		{`{"properties":{"m":{"$dynamicRef":"https://json-schema.org/draft/2020-12/schema#meta"}}}`, true},
		{`{"properties":{"m":{"$recursiveRef":"http://json-schema.org/draft/2019-09/schema"}}}`, true},
		{`{"properties":{"$ref":{"type":"string"}}}`, false}, // a property's name, not a reference
	} {
		if got := readsStrings(decode(c.schema)); got != c.reads {
			t.Errorf("readsStrings(%s) = %v, want %v", c.schema, got, c.reads)
		}
	}
	// A schema that is not plain decoded JSON is taken to read them.
	if !readsStrings(map[string]any{"properties": struct{ X int }{}}) {
		t.Error("readsStrings of a struct value = false, want true")
	}
}
