package jsonsplice

import (
	"encoding/json"
	"testing"
)

// Malformed documents are errors, never a panic or a wrong offset.
func TestParseMalformed(t *testing.T) {
	for _, doc := range []string{"", "[]", "{", `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":"x`, `{"a":{"b":1}`, `{"a":1 "b":2}`, `{"a":]}`, `{"\`} {
		if _, err := Parse([]byte(doc), 0); err == nil {
			t.Errorf("Parse(%q): no error", doc)
		}
	}
}

func TestMembers(t *testing.T) {
	doc := []byte(`{ "a" : {"x": [1, "}", {"y": "\""}]}, "b":true ,"c":null}`)
	o, err := Parse(doc, 0)
	if err != nil || len(o.Members) != 3 {
		t.Fatalf("Parse = %+v, %v", o, err)
	}
	if v := string(doc[o.Members[0].Value:o.Members[0].End]); !json.Valid([]byte(v)) || v[0] != '{' {
		t.Errorf("a's value = %q", v)
	}
	for i, want := range []string{"a", "b", "c"} {
		if o.Members[i].Name != want {
			t.Errorf("member %d = %q", i, o.Members[i].Name)
		}
	}
	for i := range o.Members {
		if out := o.Remove(doc, i); !json.Valid(out) {
			t.Errorf("Remove(%d) = %s", i, out)
		}
		if out := o.RemoveMember(doc, doc, i); !json.Valid(out) {
			t.Errorf("RemoveMember(%d) = %s", i, out)
		}
	}
}

// Whatever the bytes, Parse neither panics nor returns offsets outside the
// document, and removing a member of valid JSON leaves valid JSON.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":{"b":[1,"]"]},"c":"\\"}`, `{"a":1,}`, `{`, ` {"x" : null } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		o, err := Parse(doc, 0)
		if err != nil {
			return
		}
		for i, m := range o.Members {
			if m.Key < o.Open || m.End > o.Close || m.Value > m.End {
				t.Fatalf("member %d out of bounds: %+v in %d bytes", i, m, len(doc))
			}
			if json.Valid(doc) && !json.Valid(o.RemoveMember(doc, doc, i)) {
				t.Fatalf("RemoveMember(%d) of %q is not JSON", i, doc)
			}
		}
	})
}
