package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// canonicalByDecoding is Canonical as its definition reads: decode (numbers
// as written), encode (keys sorted, no HTML escaping). Canonical must give
// exactly its bytes, without its cost.
func canonicalByDecoding(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return []byte("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[1.50,"<x&y>",{"z":null,"y":true}]}`, `{"a":1,"a":2}`, `{"\u0061":1,"a":2,"b":{"a":3,"\u0061":4}}`,
		`{"é":"\u00e9","e\u0301":"x"}`, `{"k":"line\u2028sep\u2029", "c":"\u0001\b\f\n\r\t\"\\/"}`, "{\"bad\":\"\xff\xfe\"}",
		`{"s":"\ud800"}`, `[{"b":{"d":[],"c":{}},"a":0}, -0.0e+5, 1E400]`, `  { "a" : { "b" : [ 1 , 2 ] } }  `, `{} {}`,
		`"top"`, `12`, `{"a":{"a":{"a":{"z":1,"y":2}}}}`, `{"x":[[],[{}],{"q":[{"r":1,"p":2}]}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		want, werr := canonicalByDecoding(json.RawMessage(in))
		got, gerr := Canonical(json.RawMessage(in))
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("Canonical(%q): err %v; decoding says %v", in, gerr, werr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Canonical(%q)\n = %s\nwant %s", in, got, want)
		}
		if werr == nil {
			if d := NewDigester(nil).Digest(json.RawMessage(in)); d.Bytes != len(want) {
				t.Fatalf("Digest(%q).Bytes = %d, want %d", in, d.Bytes, len(want))
			}
		}
	})
}

// Digesting large arguments costs little more than the arguments: it never
// holds them decoded (which costs some fifty times their size for many
// small values).
func TestDigestOfLargeArgumentsStaysSmall(t *testing.T) {
	for shape, item := range map[string]string{"numbers": `1`, "objects": `{"k":1,"j":"v"}`, "strings": `"` + strings.Repeat("x", 1000) + `"`} {
		var b strings.Builder
		b.WriteString(`{"z":true,"a":[`)
		for i := 0; b.Len() < 8<<20; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(item)
		}
		b.WriteString(`]}`)
		raw := json.RawMessage(b.String())
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		d := NewDigester([]byte("k")).Digest(raw)
		runtime.ReadMemStats(&after)
		if d.Bytes != len(raw) {
			t.Errorf("%s: %d canonical bytes, want %d", shape, d.Bytes, len(raw))
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(raw))/4 {
			t.Errorf("%s: digesting %d bytes of arguments allocated %d bytes", shape, len(raw), alloc)
		}
	}
}

// Random documents, built to hit what random bytes rarely do: nesting,
// keys given twice or spelled with escapes, strings the encoder escapes.
func TestCanonicalMatchesDecoding(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := []string{`"a"`, `"b"`, `"\u0061"`, `"é"`, `"e\u0301"`, `"<&>"`, `"a\"b"`, `""`, `"\u2028"`, `"zz"`, "\"\xff\""}
	scalars := []string{`1`, `-0.50`, `1e400`, `true`, `false`, `null`, `"x"`, `"\ud83d\ude00"`, `"\ud800"`, `"tab\there"`, "\"\u2029\"", `"<p>&amp;</p>"`}
	ws := []string{"", " ", "\n\t"}
	var gen func(depth int) string
	gen = func(depth int) string {
		w := func() string { return ws[r.IntN(len(ws))] }
		switch n := r.IntN(4); {
		case depth > 5 || n == 0:
			return scalars[r.IntN(len(scalars))]
		case n == 1:
			var parts []string
			for range r.IntN(4) {
				parts = append(parts, w()+gen(depth+1)+w())
			}
			return "[" + strings.Join(parts, ",") + "]"
		default:
			var parts []string
			for range r.IntN(6) {
				parts = append(parts, w()+keys[r.IntN(len(keys))]+w()+":"+w()+gen(depth+1))
			}
			return "{" + strings.Join(parts, ",") + w() + "}"
		}
	}
	for range 5000 {
		in := gen(0)
		want, werr := canonicalByDecoding(json.RawMessage(in))
		got, gerr := Canonical(json.RawMessage(in))
		if werr != nil || gerr != nil || !bytes.Equal(got, want) {
			t.Fatalf("Canonical(%s)\n = %s, %v\nwant %s, %v", in, got, gerr, want, werr)
		}
	}
}
