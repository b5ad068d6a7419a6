package strict

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCheck: Check never panics, and what it passes can mean one thing
// only: no key twice in any object, valid UTF-8 throughout (a repaired
// message, which it hands back, included). Seeded with the hostile corpus
// (testdata/strict/corpus.jsonl).
func FuzzCheck(f *testing.F) {
	if file, err := os.Open("../../testdata/strict/corpus.jsonl"); err == nil {
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			var it struct{ Message, From string }
			if json.Unmarshal(sc.Bytes(), &it) == nil {
				f.Add([]byte(strings.ReplaceAll(it.Message, "<FF>", "\xff")), it.From == "server")
			}
		}
		file.Close()
	}
	f.Fuzz(func(t *testing.T, msg []byte, fromServer bool) {
		side := FromCaller
		if fromServer {
			side = FromServer
		}
		fixed, p := Check(msg, side)
		if p != nil || !json.Valid(msg) || bytes.TrimSpace(msg)[0] != '{' {
			return
		}
		if fixed != nil {
			msg = fixed
		}
		if !utf8.Valid(msg) {
			t.Fatalf("passed invalid UTF-8: %q", msg)
		}
		if dup := duplicateKey(json.NewDecoder(bytes.NewReader(msg)), side == FromCaller, 0); dup != "" {
			t.Fatalf("passed a key twice (%q): %q", dup, msg)
		}
	})
}

// duplicateKey finds a key twice in one object by another reader than
// Check's (encoding/json's tokens), skipping a caller's call arguments.
func duplicateKey(dec *json.Decoder, caller bool, depth int) string {
	tok, err := dec.Token()
	if err != nil {
		return ""
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, _ := dec.Token()
			key, _ := k.(string)
			if seen[key] {
				return key
			}
			seen[key] = true
			if caller && depth == 1 && key == "arguments" {
				var skip json.RawMessage
				_ = dec.Decode(&skip)
				continue
			}
			if d := duplicateKey(dec, caller, depth+1); d != "" {
				return d
			}
		}
		dec.Token()
	case json.Delim('['):
		for dec.More() {
			if d := duplicateKey(dec, caller, depth+1); d != "" {
				return d
			}
		}
		dec.Token()
	}
	return ""
}

// The cost of the check on a message of megabytes, against json.Valid's
// single pass (both faces and the hosted connection run json.Valid first).
func BenchmarkCheck8MiB(b *testing.B) {
	big := strings.Repeat("lorem ipsum dolor sit amet ", 8<<20/27)
	msg := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + big + `"}],"structuredContent":{"rows":[` +
		strings.Repeat(`{"id":1,"name":"x","tags":["a","b"]},`, 1000) + `{}]}}}`)
	b.Run("check", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			if _, p := Check(msg, FromServer); p != nil {
				b.Fatal(p)
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			json.Valid(msg)
		}
	})
}
