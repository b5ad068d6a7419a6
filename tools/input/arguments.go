// Package input reads what a call carries. Own checks the input of one of
// colibri's own tools against exactly the schema it advertises (an unknown
// key, a wrong type or a missing key is invalid_arguments naming the JSON
// location) and decodes it; Arguments decodes a hosted tool's arguments for
// its schema check and returns the bytes the hosted server is sent, which
// cannot mean anything else to it than what was checked.
//
//	var in input.CallTool
//	err := input.Own(table, describe.CallToolTool, raw, &in)
//	value, sent, err := input.Arguments(in.Arguments)
package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/colibri-mcp/colibri-mcp/internal/schema"
	"github.com/colibri-mcp/colibri-mcp/internal/strict"
)

// Arguments decodes a hosted tool's arguments for its schema check,
// keeping numbers exactly as written (json.Number), and returns the bytes
// the hosted server is sent (nil: send {}).
//
// The bytes sent are the caller's own (issue 16: decoded once, never
// encoded again), and they cannot mean anything else to the hosted server
// than the value the schema check saw: arguments that could are refused,
// naming the location —
//   - an object with a key twice: Go keeps the last value, a server's
//     parser may keep the first, or refuse, and the check would have seen
//     another value than the server reads;
//   - a string that is not valid UTF-8 or holds a lone surrogate escape
//     ("\ud800"), which Go reads as U+FFFD and others otherwise.
//
// Arguments of more than MaxValues values are refused before they are
// decoded (ErrTooManyValues).
func Arguments(raw json.RawMessage) (map[string]any, json.RawMessage, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return map[string]any{}, nil, nil
	}
	n, lone, values := scanArguments(raw)
	if values > MaxValues {
		return nil, nil, tooManyValues("arguments", values)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, fmt.Errorf("arguments: invalid JSON: %w", err)
	}
	// The bytes are forwarded as they are: nothing may follow the object.
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("arguments: invalid JSON: more than one JSON value")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("arguments: must be a JSON object, got %s", jsonType(v))
	}
	if n != members(m) {
		at, key := firstDuplicate(raw)
		return nil, nil, fmt.Errorf("arguments%s: key %q appears more than once (a hosted server may read either value)", at, key)
	}
	if lone || !utf8.Valid(raw) {
		// Go reads either as U+FFFD; JavaScript keeps a lone surrogate and
		// reads invalid bytes as U+FFFD; others refuse (docs/protocol.md,
		// "Strict reading"). The caller is told where, and can correct it.
		if p := strict.Value(raw); p != nil {
			return nil, nil, fmt.Errorf("arguments%s: %s", p.Pointer, p.Reason)
		}
	}
	return m, raw, nil
}

// MaxValues bounds the values (array elements, object members' keys and
// values, the scalars and containers they hold) of a call's input that
// colibri decodes generically, for a schema check. A value takes two bytes
// in JSON ("0,") and far more decoded (an interface, its boxed number or
// string, the slice or map slot holding it, and what the schema check, the
// audit log and the call's record then hold of it): 4 MiB of small values,
// two million of them, cost colibri 173 MB of peak RSS (measured) where
// their bytes cost 4. A member's key is a value of its own (a decoded
// string in a map slot): 240,000 small members cost 84 MB counted once
// each. 262,144 values, keys counted, decode in under 64 MB whatever their
// shape, and pass an honest document of megabytes (records of thirty
// fields, a value every 20 bytes: 2 MB is some 200,000 values); 65,536
// refused one of 2 MB.
const MaxValues = 1 << 18

// ErrTooManyValues is what an input of more than MaxValues values fails
// with: the call is refused too_large.
var ErrTooManyValues = errors.New("more values than colibri decodes for a schema check")

func tooManyValues(what string, values int) error {
	return fmt.Errorf("%s: %w: %d or more, at most %d (arrays of many small values cost colibri fifty times their size to check; send fewer, or larger, values)", what, ErrTooManyValues, values, MaxValues)
}

// members is the number of object members in v, at every depth.
func members(v any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		n = len(x)
		for _, e := range x {
			n += members(e)
		}
	case []any:
		for _, e := range x {
			n += members(e)
		}
	}
	return n
}

// scanArguments counts the object members in raw (a member is the one
// place a colon stands outside a string) and its values (one, plus one a
// comma, one a colon (a key) and one a container outside strings: at least
// as many as the decoder makes, keys counted), and reports whether a string in it holds a surrogate
// escape that is not half of a pair. String contents are skipped with byte
// searches: a large string costs little more than a memchr. raw need not
// be valid JSON: it is scanned before it is decoded, and the counts of an
// invalid one mean nothing.
func scanArguments(raw []byte) (members int, lone bool, values int) {
	values = 1
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case ':':
			members++
			values++ // the member's key
		case ',', '[', '{':
			values++
		case '"':
			start := i + 1
			end := start
			for {
				j := bytes.IndexByte(raw[end:], '"')
				if j < 0 {
					return members, lone, values // not valid JSON
				}
				end += j
				k := end
				for k > start && raw[k-1] == '\\' {
					k--
				}
				if (end-k)%2 == 0 {
					break // not escaped: the string ends here
				}
				end++
			}
			if !lone && bytes.IndexByte(raw[start:end], '\\') >= 0 {
				lone = loneSurrogate(raw[start:end])
			}
			i = end
		}
	}
	return members, lone, values
}

// loneSurrogate reports whether s, a JSON string's contents, holds a
// \uD800–\uDFFF escape that is not a high half followed by a low half.
func loneSurrogate(s []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(s[i:], '\\')
		if j < 0 {
			return false
		}
		i += j
		if i+1 >= len(s) || s[i+1] != 'u' {
			i += 2 // a two-byte escape
			continue
		}
		r := hex4(s[i+2:])
		i += 6
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
				return true
			}
			if lo := hex4(s[i+2:]); lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		}
	}
}

// hex4 is the value of the four hex digits s starts with (-1 if it does not).
func hex4(s []byte) int {
	if len(s) < 4 {
		return -1
	}
	v, err := strconv.ParseUint(string(s[:4]), 16, 16)
	if err != nil {
		return -1
	}
	return int(v)
}

// firstDuplicate finds the first object in raw (valid JSON) with a key
// twice: the object's place as a JSON Pointer ("" for the top) and the key.
func firstDuplicate(raw []byte) (at, key string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var walk func(at string) (string, string, bool)
	walk = func(at string) (string, string, bool) {
		tok, err := dec.Token()
		if err != nil {
			return "", "", false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				t, err := dec.Token()
				if err != nil {
					return "", "", false
				}
				k, _ := t.(string)
				if seen[k] {
					return at, k, true
				}
				seen[k] = true
				if a, k, ok := walk(at + "/" + schema.EscapePointer(k)); ok {
					return a, k, true
				}
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if a, k, ok := walk(at + "/" + strconv.Itoa(i)); ok {
					return a, k, true
				}
			}
			_, _ = dec.Token()
		}
		return "", "", false
	}
	at, key, _ = walk("")
	return at, key
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}
