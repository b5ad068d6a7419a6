package bulk

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// cutAt is msg cut at the offsets cuts names (each byte a step forward from
// the last cut, 0 making an empty part), so that a fuzzer can place cuts
// anywhere: inside a multi-byte character, a \uXXXX escape, a backslash
// run before a quote, a key.
func cutAt(msg, cuts []byte) [][]byte {
	var parts [][]byte
	for _, c := range cuts {
		n := min(int(c), len(msg))
		parts, msg = append(parts, msg[:n]), msg[n:]
	}
	return append(parts, msg)
}

// FuzzLiftCuts: lifted from parts cut anywhere (empty ones too), a message
// is lifted as it is whole, lowers back to itself, and the table holds the
// bytes of what it lifted, each reference's value being its literal's.
func FuzzLiftCuts(f *testing.F) {
	for _, s := range []string{
		`{"params":{"arguments":{"a":"h\u00e9llo \u20ac\ud83d\ude00 w\\\\\"d","b":["x\\\\","y\\\"z"]}}}`,
		"{\"params\":{\"arguments\":{\"a\":\"\xe2\x82\xac\xf0\x9f\x98\x80\xc3\xa9\",\"b\":\"\xe2\x82\"}}}",
		`{"result":{"content":[{"type":"text","text":"a\"b\\c\/d\n\u0041"}],"structuredContent":{"x":"abcdef"}}}`,
		`{"params":{"arguments":{"a":"\\\\\\\\\\\"\\\\"}}}`,
		`{"params":{"arguments":{"a":"bad \ud800 surrogate","b":"ok string"}}}`,
		"{\"params\":{\"arguments\":{\"a\":\"in\xffvalid \xc3( \xed\xa0\x80\",\"b\":\"ok string\"}}}",
	} {
		f.Add([]byte(s), []byte{1, 0, 2, 3, 5, 7, 11, 13}, "params.arguments", false)
		f.Add([]byte(s), []byte{30, 1, 1, 1, 1}, "", false)
		f.Add([]byte(s), []byte{9, 2, 0, 0, 4, 1}, "", true)
	}
	f.Fuzz(func(t *testing.T, msg, cuts []byte, path string, result bool) {
		var under []string
		if path != "" {
			under = strings.Split(path, ".")
		}
		whole, parted := New(4), New(4)
		lift := func(tab *Table, parts [][]byte) ([]byte, []Ref) {
			if result {
				return tab.LiftResultParts(parts)
			}
			return tab.LiftParts(parts, under...)
		}
		parts := cutAt(msg, cuts)
		want, wrefs := lift(whole, [][]byte{msg})
		got, refs := lift(parted, parts)
		if g := bytes.ReplaceAll(got, []byte(parted.marker), []byte(whole.marker)); !bytes.Equal(g, want) {
			t.Fatalf("lifted from %q = %q, want %q (as whole)", parts, got, want)
		}
		if json.Valid(got) != json.Valid(msg) {
			t.Fatalf("json.Valid(lifted) = %v, json.Valid(msg) = %v; parts %q", json.Valid(got), json.Valid(msg), parts)
		}
		segs, err := parted.Lower(got)
		if err != nil || !bytes.Equal(bytes.Join(segs, nil), msg) {
			t.Fatalf("Lower(lifted from %q) = %q, %v; want msg", parts, bytes.Join(segs, nil), err)
		}
		held := int64(0)
		for _, r := range refs {
			s := parted.marker + strconv.FormatUint(uint64(r), 10)
			n, ok := parted.Size(s)
			if !ok {
				t.Fatalf("Size(%d) not live", r)
			}
			held += int64(n)
			v, ok := parted.Value(s)
			wv, _ := whole.Value(whole.marker + strconv.FormatUint(uint64(wrefs[0]+r-refs[0]), 10))
			if !ok || v != wv {
				t.Fatalf("Value(%d) = %q, %v; want %q", r, v, ok, wv)
			}
		}
		if h := parted.Held(); h != held {
			t.Fatalf("Held() = %d, want %d", h, held)
		}
		parted.Release(refs...)
		parted.Release(refs...) // twice: no drift
		if n, h := parted.Len(), parted.Held(); n != 0 || h != 0 {
			t.Fatalf("after Release: Len() = %d, Held() = %d", n, h)
		}
	})
}

// The value of a string lifted from pieces is one copy of it: the pieces
// are not gathered into another first (the schema check resolves an 8 MiB
// argument this way).
func TestValueOfPiecesIsOneCopy(t *testing.T) {
	tab := New(DefaultMin)
	text := strings.Repeat("lorem ipsum \u00e9 ", 8<<20/15)
	msg := []byte(`{"params":{"arguments":{"text":"` + text + `"}}}`)
	lifted, refs := tab.LiftParts(splits(msg, 64<<10), "params", "arguments")
	if len(refs) != 1 {
		t.Fatalf("lifted %d strings, want 1", len(refs))
	}
	defer tab.Release(refs...)
	var v struct {
		Params struct{ Arguments struct{ Text string } }
	}
	if err := json.Unmarshal(lifted, &v); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, ok := tab.Value(v.Params.Arguments.Text)
	runtime.ReadMemStats(&after)
	if !ok || got != text {
		t.Fatalf("Value: %d bytes, %v; want the %d bytes of the text", len(got), ok, len(text))
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > uint64(len(text))+64<<10 {
		t.Errorf("Value of an %d-byte string allocated %d bytes, want one copy", len(text), n)
	}
}
