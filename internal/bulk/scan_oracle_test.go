package bulk

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// oracleSpans is what scan should find, worked out independently with
// encoding/json's tokenizer: every string value (never a key) whose path
// of raw keys from the top begins with under, at least min bytes long
// (quotes included) and clean; want narrows it as for LiftResult.
func oracleSpans(t testing.TB, msg []byte, under []string, min int, want pick) []span {
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber()
	type frame struct {
		object bool
		key    []byte // raw key of the member being read (objects)
		isKey  bool   // the next string token is a key
	}
	var stack []*frame
	var spans []span
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			return spans
		}
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		afterValue := func() {
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].isKey = true
			}
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{object: true, isKey: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				afterValue()
			}
		case string:
			start := before + int64(bytes.IndexByte(msg[before:], '"'))
			end := dec.InputOffset()
			lit := msg[start:end]
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].isKey {
				stack[n-1].key = lit[1 : len(lit)-1]
				stack[n-1].isKey = false
				continue
			}
			// The path: the raw keys of the open objects; an array
			// element breaks a path (nil key).
			var keys [][]byte
			for _, f := range stack {
				if f.object {
					keys = append(keys, f.key)
				} else {
					keys = append(keys, nil)
				}
			}
			ok := len(keys) >= len(under)
			for i := 0; ok && i < len(under); i++ {
				ok = keys[i] != nil && string(keys[i]) == under[i]
			}
			if ok && len(lit) >= min && oracleClean(lit) && picked(want, keys, len(under)) {
				spans = append(spans, span{int(start), int(end)})
			}
			afterValue()
		default:
			afterValue()
		}
	}
}

// oracleClean is clean worked out another way: the literal decodes
// (encoding/json: escapes and control characters), its raw bytes are valid
// UTF-8, and every \u escape of a surrogate is half of a pair that
// unicode/utf16 decodes to a character.
func oracleClean(lit []byte) bool {
	var s string
	if json.Unmarshal(lit, &s) != nil || !utf8.Valid(lit) {
		return false
	}
	body := lit[1 : len(lit)-1]
	unit := func(h []byte) rune {
		n, _ := strconv.ParseUint(string(h), 16, 32)
		return rune(n)
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if body[i+1] != 'u' {
			i++
			continue
		}
		r1 := unit(body[i+2 : i+6])
		if !utf16.IsSurrogate(r1) {
			i += 5
			continue
		}
		if i+12 > len(body) || body[i+6] != '\\' || body[i+7] != 'u' ||
			utf16.DecodeRune(r1, unit(body[i+8:i+12])) == unicode.ReplacementChar {
			return false
		}
		i += 11
	}
	return true
}

// splits is msg cut into parts of n bytes (the last shorter).
func splits(msg []byte, n int) [][]byte {
	var parts [][]byte
	for len(msg) > n {
		parts, msg = append(parts, msg[:n]), msg[n:]
	}
	return append(parts, msg)
}

// checkScan compares scan, over msg whole and cut into parts of several
// sizes, to the oracle.
func checkScan(t *testing.T, msg []byte, under []string, want pick) {
	t.Helper()
	tab := New(4)
	exp := oracleSpans(t, msg, under, 4, want)
	for _, n := range []int{len(msg), 1, 2, 3, 5, 64} {
		got := tab.scan(newRope(splits(msg, max(n, 1))), under, want)
		if len(got) == 0 && len(exp) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, exp) {
			t.Fatalf("scan(%q in parts of %d, %q) = %v, want %v", msg, n, under, got, exp)
		}
	}
}

func FuzzScanPath(f *testing.F) {
	for _, s := range []string{
		`{"params":{"arguments":{"a":"hello world","b":["x\\\\","y\\\"z"]}}}`,
		`{"method":"tools/call","params":{"name":"abcdef","arguments":"abcdef"},"id":"abcdef"}`,
		`{"params":[{"arguments":"abcdef"}],"x":{"params":{"arguments":"abcdef"}}}`,
		`{"params":{"arguments":{},"other":"abcdef"},"params2":"abcdef"}`,
		`{"result":{"content":[{"type":"text","text":"abcdef"}],"structuredContent":{"x":"abcdef","text":["abcdef"]},"text":"abcdef"}}`,
		`{"params":{"x":1,"arguments":{"abcdef":"abcdef"}}}`,
	} {
		f.Add([]byte(s), "params.arguments", false)
		f.Add([]byte(s), "", false)
		f.Add([]byte(s), "result", true)
	}
	f.Fuzz(func(t *testing.T, msg []byte, path string, result bool) {
		if !json.Valid(msg) {
			return
		}
		var under []string
		if path != "" {
			under = strings.Split(path, ".")
		}
		var want pick
		if result {
			under = []string{"result"}
			want = func(key, first []byte) bool {
				return string(key) == "text" || string(first) == "structuredContent"
			}
		}
		checkScan(t, msg, under, want)
	})
}
