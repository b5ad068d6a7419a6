package stdioserve

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxSafeInteger is the largest integer a float64 holds exactly, and
// JavaScript's Number.MAX_SAFE_INTEGER.
const maxSafeInteger = 1<<53 - 1

// idProblem says why the id of a message (go-sdk's reading of it: id) cannot
// be answered as the caller wrote it, or "" when it can. go-sdk reads a
// number id into a float64, then an int64: 1.5 would be answered as 1, and
// every id past 2^63 as -9223372036854775808, so that two requests' answers
// could pass for each other's; a string id that is not valid UTF-8 comes
// back changed; and an explicit null is read as no id, a notification, which
// is never answered (MCP: a request's id "MUST NOT be null").
func idProblem(line []byte, id jsonrpc.ID) string {
	switch id.Raw().(type) {
	case int64:
		if raw, _ := member(line, "id"); !safeInteger(raw) {
			return "a number id must be an integer between -(2^53-1) and 2^53-1"
		}
	case string:
		if raw, _ := member(line, "id"); !exactString(raw) {
			return "a string id must be valid Unicode"
		}
	default:
		if raw, found := member(line, "id"); found && string(raw) == "null" {
			return "the id is null: a request's id is a string or an integer, and a notification has none"
		}
	}
	return ""
}

// readableID is the id of a JSON object line when it can be answered as
// written, else the null id.
func readableID(line []byte) jsonrpc.ID {
	raw, found := member(line, "id")
	var v any
	if !found || json.Unmarshal(raw, &v) != nil {
		return jsonrpc.ID{}
	}
	switch v.(type) {
	case float64:
		if !safeInteger(raw) {
			return jsonrpc.ID{}
		}
	case string:
		if !exactString(raw) {
			return jsonrpc.ID{}
		}
	default:
		return jsonrpc.ID{}
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		return jsonrpc.ID{}
	}
	return id
}

// safeInteger reports whether a JSON number is an integer (1 or 1.0, not
// 1.5 or 1e2) no larger than maxSafeInteger either way.
func safeInteger(raw []byte) bool {
	s := string(raw)
	if whole, frac, ok := strings.Cut(s, "."); ok {
		if strings.Trim(frac, "0") != "" {
			return false
		}
		s = whole
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && -maxSafeInteger <= n && n <= maxSafeInteger
}

// exactString reports whether a JSON string decodes to what it says: valid
// UTF-8, and no \u escape of half a surrogate pair (which decodes to U+FFFD).
func exactString(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	return !strings.ContainsRune(s, utf8.RuneError) ||
		bytes.Contains(raw, []byte("\uFFFD")) || bytes.Contains(bytes.ToLower(raw), []byte(`\ufffd`))
}

// member returns the raw value of the member called key of the JSON object
// in data, which must be valid JSON; of several, the last, as go-sdk's
// decoder keeps. Names compare exactly, as go-sdk's do. It walks only the
// top level, once, without decoding: "id" usually comes first, and a large
// "params" is skipped, never copied.
func member(data []byte, key string) (raw []byte, found bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	i++
	for {
		i = skipSpace(data, i)
		if i >= len(data) || data[i] != '"' {
			return raw, found // the closing brace
		}
		nameEnd := skipValue(data, i)
		name := data[i:nameEnd]
		i = skipSpace(data, skipSpace(data, nameEnd)+1) // past the colon
		end := skipValue(data, i)
		if nameIs(name, key) {
			raw, found = data[i:end], true
		}
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i++
		}
	}
}

func nameIs(quoted []byte, key string) bool {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return string(quoted[1:len(quoted)-1]) == key
	}
	var s string
	return json.Unmarshal(quoted, &s) == nil && s == key
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at
// data[i].
func skipValue(data []byte, i int) int {
	depth, inString := 0, false
	for j := i; j < len(data); j++ {
		b := data[j]
		if inString {
			switch b {
			case '\\':
				j++
			case '"':
				inString = false
				if depth == 0 {
					return j + 1
				}
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j // the end of a scalar: its container closes
			}
			if depth--; depth == 0 {
				return j + 1
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return j
			}
		}
	}
	return len(data)
}
