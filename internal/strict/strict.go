// Package strict reads a JSON-RPC message of MCP's the way the strictest
// reader behind colibri would, and refuses one that two readers could
// understand differently (docs/protocol.md, "Strict reading").
//
// A gateway's checks are worth only as much as its agreement with the parser
// behind it. Go's encoding/json keeps the last of two equal keys and matches
// a struct field whatever the case of the key ("Name" and "ſcope" read as
// name and scope); JavaScript's JSON.parse keeps the last key too but is
// exact about case; parsers in C stop a key at a NUL. A message that any two
// of them read differently lets a caller show colibri's policy one tool name
// and the hosted server another. Check refuses, before any policy or pin
// decision:
//
//   - a key twice in any object (after decoding escapes: "a" and "\u0061"
//     are the same key);
//   - a key that differs only in case, or by a NUL and what follows it,
//     from a field MCP defines at that place — checked in the objects whose
//     keys MCP's schema lists (the envelope, the params and results of each
//     method; Tool, Prompt, Resource, Content, Annotations), never inside
//     arguments, structuredContent, schemas, _meta or experimental;
//   - invalid UTF-8, or an escaped lone surrogate ("\ud800"), in any string;
//     in the text of a hosted server's content it is replaced with U+FFFD
//     instead (a file name read from disk), and Check says so;
//   - an MCP integer field (id, requestId, progressToken, maxTokens, size,
//     code, …) that is not an integer within ±(2^53−1) written without
//     fraction or exponent, and any number too large for a float64.
//
// The message must be valid JSON (both faces and the hosted connection
// check that first); Check never panics on one that is not.
//
//	if fixed, p := strict.Check(line, strict.FromServer); p != nil {
//		return p // a *strict.Problem names the JSON location
//	} else if fixed != nil {
//		line = fixed // text with invalid UTF-8, repaired
//	}
package strict

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Side is who sent a message.
type Side uint8

const (
	// FromCaller is a message of colibri's caller (an editor, an HTTP
	// client): the arguments of a tools/call are left to the call's own
	// check (tools/input), which answers invalid_arguments.
	FromCaller Side = iota
	// FromServer is a message of a hosted server.
	FromServer
)

// Problem is why a message was refused, and where.
type Problem struct {
	// Pointer is the JSON pointer (RFC 6901) of the key or value at fault.
	Pointer string
	// Reason says what is wrong there.
	Reason string
	// InParams tells a problem below params (or a result, or an error)
	// from one in the envelope: a caller is answered −32602 for the
	// first, −32600 for the second.
	InParams bool
}

func (p *Problem) Error() string {
	at := p.Pointer
	if at == "" {
		at = "/"
	}
	return "at " + at + ": " + p.Reason
}

// maxDepth bounds nesting, as go-sdk's own decoder does (its depth scan
// refuses a message nested deeper than 10,000).
const maxDepth = 10000

// Check reads msg, one JSON-RPC message, strictly. It returns the first
// problem, or nil. When a hosted server's content text held invalid UTF-8
// or a lone surrogate, fixed is msg with those replaced by U+FFFD (the
// problem is nil then); otherwise fixed is nil.
func Check(msg []byte, side Side) (fixed []byte, p *Problem) {
	if !reading {
		return nil, nil
	}
	w := walker{msg: msg, side: side}
	w.path = make([]seg, 0, 8) // one allocation for most messages' depth
	w.pos = w.skipSpace(0)
	switch {
	case w.pos < len(msg) && msg[w.pos] == '{':
		w.envelope()
	case w.pos < len(msg) && msg[w.pos] == '[':
		// A batch (JSON-RPC 2.0; MCP until 2025-03-26, which go-sdk still
		// serves over HTTP): each of its messages is read as one.
		w.batch()
	default:
		// A scalar: go-sdk refuses it.
		return nil, nil
	}
	if w.problem != nil {
		return nil, w.problem
	}
	if len(w.repairs) > 0 {
		return w.repaired(), nil
	}
	return nil, nil
}

// Value reads one JSON value of someone else's (a tool's arguments) for
// what any reader could read differently in it: a key twice in an object,
// invalid UTF-8 or an escaped lone surrogate. Its numbers and the case of
// its keys are its owner's; the Pointer is relative to the value.
func Value(v []byte) *Problem {
	if !reading {
		return nil
	}
	w := walker{msg: v, anyNumber: true}
	w.value(nil)
	return w.problem
}

type walker struct {
	msg       []byte
	pos       int
	side      Side
	anyNumber bool  // numbers are not read (Value)
	base      int   // len(path) at the envelope of the message read (a batch's index before it)
	path      []seg // the JSON pointer's segments, made a string only for a problem
	params    bool  // below params, result or error
	depth     int
	problem   *Problem
	repairs   []span // strings of content text to repair, in order
	// answered: the envelope read so far holds result (1), error (2)
	answered uint8
}

type span struct{ start, end int } // a string token's bytes, quotes included

// seg is one segment of the JSON pointer: an object's key (a view of the
// message, or the key decoded), or an array's index.
type seg struct {
	key   []byte
	index int
}

// A problem's pointer and reason are bounded whatever the message holds (a
// key of megabytes, nesting 10,000 deep): each key in them is clipped to
// maxKeyShown bytes, and a pointer longer than maxPointer keeps its start
// and its end around "/…".
const (
	maxKeyShown = 64
	maxPointer  = 1024
)

func (w *walker) fail(format string, args ...any) {
	if w.problem != nil {
		return
	}
	var b strings.Builder
	for _, s := range w.path {
		b.WriteByte('/')
		if s.key == nil {
			b.WriteString(strconv.Itoa(s.index))
			continue
		}
		k := strings.ReplaceAll(clipKey(s.key), "~", "~0")
		b.WriteString(strings.ReplaceAll(k, "/", "~1"))
	}
	ptr := b.String()
	if len(ptr) > maxPointer {
		head, tail := ptr[:maxPointer/2], ptr[len(ptr)-maxPointer/2:]
		for len(head) > 0 && !utf8.RuneStart(ptr[len(head)]) {
			head = head[:len(head)-1]
		}
		for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
			tail = tail[1:]
		}
		ptr = head + "/…" + tail
	}
	w.problem = &Problem{Pointer: ptr, Reason: fmt.Sprintf(format, args...), InParams: w.params}
}

// clipKey is key, or its first maxKeyShown bytes (whole runes) and "…".
func clipKey(key []byte) string {
	if len(key) <= maxKeyShown {
		return string(key)
	}
	n := maxKeyShown
	for n > 0 && !utf8.RuneStart(key[n]) {
		n--
	}
	return string(key[:n]) + "…"
}

// envelope reads the top-level object: the method first (the shape of the
// params depends on it, and it may come after them), then every member.
func (w *walker) envelope() {
	w.base, w.answered = len(w.path), 0
	params := w.method()
	if w.problem != nil {
		return
	}
	w.object(envelopeOf(params))
}

// batch reads each message of a batch.
func (w *walker) batch() {
	w.pos = w.skipSpace(w.pos + 1) // past '['
	for i := 0; w.problem == nil; i++ {
		if w.pos >= len(w.msg) || w.msg[w.pos] == ']' {
			return
		}
		w.path = append(w.path, seg{index: i})
		if w.msg[w.pos] == '{' {
			w.envelope()
		} else if !w.skipValue() {
			w.fail("unreadable value")
		}
		if w.problem != nil {
			return
		}
		w.path = w.path[:0]
		w.pos = w.skipSpace(w.pos)
		if w.pos < len(w.msg) && w.msg[w.pos] == ',' {
			w.pos = w.skipSpace(w.pos + 1)
		}
	}
}

// method finds the top-level "method" string without reading anything
// else (values are skipped), and whether there is one.
func (w *walker) method() *shape {
	save := w.pos
	defer func() { w.pos = save }()
	i := w.skipSpace(w.pos + 1)
	for i < len(w.msg) && w.msg[i] == '"' {
		end, hasEscape := w.stringEnd(i)
		if end < 0 {
			return nil
		}
		isMethod := string(w.msg[i+1:end-1]) == "method" // (no copy)
		if hasEscape {
			// "\u006dethod" is "method" to every reader (a key that does
			// not decode is refused when the object is read).
			key, _ := decodeString(w.msg[i:end])
			isMethod = key == "method"
		}
		i = w.skipSpace(end)
		if i >= len(w.msg) || w.msg[i] != ':' {
			return nil
		}
		i = w.skipSpace(i + 1)
		if isMethod && i < len(w.msg) && w.msg[i] == '"' {
			// The first is the one: a second "method" is a key twice,
			// which reading the object refuses.
			vend, _ := w.stringEnd(i)
			if vend < 0 {
				return nil
			}
			if raw := w.msg[i+1 : vend-1]; bytes.IndexByte(raw, '\\') < 0 {
				return w.lookup(raw)
			}
			if m, ok := decodeString(w.msg[i:vend]); ok {
				return requestParams(m, w.side)
			}
			return nil
		} else if isMethod {
			return nil
		} else {
			w.pos = i
			if !w.skipValue() {
				return nil
			}
			i = w.pos
		}
		i = w.skipSpace(i)
		if i < len(w.msg) && w.msg[i] == ',' {
			i = w.skipSpace(i + 1)
		}
	}
	return nil
}

// lookup is the params shape of the method named raw (unescaped), without
// a copy of the name.
func (w *walker) lookup(raw []byte) *shape {
	if w.side == FromCaller && string(raw) == "tools/call" {
		return callerCall
	}
	return methods[string(raw)]
}

func (w *walker) skipSpace(i int) int {
	for i < len(w.msg) {
		switch w.msg[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the offset just past the string token at i (which is a
// quote), and whether it holds a backslash; -1 when it is not closed. Both
// searches are the runtime's vectorized IndexByte, and each byte is looked
// at once by each: a string of megabytes costs what a copy of it would.
func (w *walker) stringEnd(i int) (int, bool) {
	hasEscape := false
	quote := -1 // the next quote at or after j
	for j := i + 1; ; {
		if quote < j {
			k := bytes.IndexByte(w.msg[j:], '"')
			if k < 0 {
				return -1, hasEscape
			}
			quote = j + k
		}
		b := bytes.IndexByte(w.msg[j:quote], '\\')
		if b < 0 {
			return quote + 1, hasEscape
		}
		hasEscape = true
		j += b + 2 // the backslash and the character it escapes
		if j > len(w.msg) {
			return -1, hasEscape
		}
	}
}

// value reads the value at w.pos under shape s (nil: no MCP-defined keys
// below, but keys twice and bad strings are still refused).
func (w *walker) value(s *shape) {
	w.pos = w.skipSpace(w.pos)
	if w.pos >= len(w.msg) {
		w.fail("unexpected end of the message")
		return
	}
	switch c := w.msg[w.pos]; {
	case c == '{':
		w.object(s)
	case c == '[':
		w.array(s)
	case c == '"':
		w.str(s)
	case c == '-' || (c >= '0' && c <= '9'):
		w.number(s)
	default:
		w.literal()
	}
}

func (w *walker) enter() bool {
	w.depth++
	if w.depth > maxDepth {
		w.fail("nested deeper than %d", maxDepth)
		return false
	}
	return true
}

func (w *walker) object(s *shape) {
	if !w.enter() {
		return
	}
	w.pos = w.skipSpace(w.pos + 1) // past '{'
	// The keys read so far, to find one twice: a small object's are
	// searched (views of the message, no copy), a large one's mapped.
	var seenBuf [8][]byte
	seen := seenBuf[:0]
	var large map[string]struct{}
	for w.problem == nil {
		if w.pos >= len(w.msg) {
			w.fail("unexpected end of the message")
			break
		}
		if w.msg[w.pos] == '}' {
			w.pos++
			break
		}
		if w.msg[w.pos] != '"' {
			w.fail("an object key must be a string")
			break
		}
		end, hasEscape := w.stringEnd(w.pos)
		if end < 0 {
			w.fail("unterminated string")
			break
		}
		key := w.msg[w.pos+1 : end-1]
		if hasEscape {
			k, ok := decodeString(w.msg[w.pos:end])
			if !ok {
				w.path = append(w.path, seg{key: key})
				w.fail("an object key holds an escaped lone surrogate")
				break
			}
			key = []byte(k)
		}
		w.path = append(w.path, seg{key: key})
		if !utf8.Valid(key) {
			w.fail("an object key is not valid UTF-8")
			break
		}
		var dup bool
		if seen, large, dup = twice(seen, large, key); dup {
			w.fail("key %q appears twice in one object (readers keep either value)", clipKey(key))
			break
		}
		if len(w.path) == w.base+1 && w.depth == 1 {
			// JSON-RPC 2.0: a response holds result or error, never both;
			// go-sdk reads it as the error, the TypeScript SDK refuses it.
			switch string(key) {
			case "result":
				w.answered |= 1
			case "error":
				w.answered |= 2
			}
			if w.answered == 3 {
				w.fail("a response holds both result and error (readers take either, or refuse it)")
				break
			}
		}
		var child *shape
		if s != nil && s.fields != nil {
			var known bool
			child, known = s.fields[string(key)] // (no copy: a map lookup)
			if !known {
				if f, ok := s.variantOf(string(key)); ok {
					w.fail("key %q differs only in case (or after a NUL) from %q, which MCP defines here", clipKey(key), f)
					break
				}
			}
		}
		w.pos = w.skipSpace(end)
		if w.pos >= len(w.msg) || w.msg[w.pos] != ':' {
			w.fail("expected ':' after an object key")
			break
		}
		w.pos++
		wasParams := w.params
		if len(w.path) == w.base+1 && (string(key) == "params" || string(key) == "result" || string(key) == "error") {
			w.params = true
		}
		if child == skip {
			if !w.skipValue() {
				w.fail("unreadable value")
			}
		} else {
			w.value(child)
		}
		w.params = wasParams
		if w.problem != nil {
			break
		}
		w.path = w.path[:len(w.path)-1]
		w.pos = w.skipSpace(w.pos)
		if w.pos < len(w.msg) && w.msg[w.pos] == ',' {
			w.pos = w.skipSpace(w.pos + 1)
		}
	}
	w.depth--
}

// twice reports whether key was seen in this object already, and notes it
// (seen, the keys of a small object; large, a large one's).
func twice(seen [][]byte, large map[string]struct{}, key []byte) ([][]byte, map[string]struct{}, bool) {
	if large != nil {
		if _, dup := large[string(key)]; dup {
			return seen, large, true
		}
		large[string(key)] = struct{}{}
		return seen, large, false
	}
	for _, k := range seen {
		if bytes.Equal(k, key) {
			return seen, large, true
		}
	}
	if seen = append(seen, key); len(seen) > 16 {
		large = make(map[string]struct{}, 64)
		for _, k := range seen {
			large[string(k)] = struct{}{}
		}
	}
	return seen, large, false
}

func (w *walker) array(s *shape) {
	if !w.enter() {
		return
	}
	var elem *shape
	if s != nil {
		elem = s.elem
	}
	w.pos = w.skipSpace(w.pos + 1) // past '['
	for i := 0; w.problem == nil; i++ {
		if w.pos >= len(w.msg) {
			w.fail("unexpected end of the message")
			break
		}
		if w.msg[w.pos] == ']' {
			w.pos++
			break
		}
		w.path = append(w.path, seg{index: i})
		w.value(elem)
		if w.problem != nil {
			break
		}
		w.path = w.path[:len(w.path)-1]
		w.pos = w.skipSpace(w.pos)
		if w.pos < len(w.msg) && w.msg[w.pos] == ',' {
			w.pos = w.skipSpace(w.pos + 1)
		}
	}
	w.depth--
}

func (w *walker) str(s *shape) {
	end, hasEscape := w.stringEnd(w.pos)
	if end < 0 {
		w.fail("unterminated string")
		return
	}
	raw := w.msg[w.pos:end]
	start := w.pos
	w.pos = end
	valid := utf8.Valid(raw)
	if valid && hasEscape {
		_, valid = decodeString(raw)
	}
	if valid {
		return
	}
	if s == text && w.side == FromServer {
		w.repairs = append(w.repairs, span{start, end})
		return
	}
	w.fail("a string holds invalid UTF-8 or an escaped lone surrogate")
}

// number checks a number: too large for a float64 anywhere; an integer
// field's written as an integer within ±(2^53−1).
func (w *walker) number(s *shape) {
	start := w.pos
	i := w.pos
	for i < len(w.msg) {
		c := w.msg[i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			i++
			continue
		}
		break
	}
	w.pos = i
	if w.anyNumber {
		return
	}
	num := w.msg[start:i]
	// Most numbers are short integers: within range of every kind, read
	// without parsing.
	plainInt := !bytes.ContainsAny(num, ".eE")
	if plainInt && len(num) <= 15 {
		return
	}
	if s == integer {
		if !plainInt {
			w.fail("%s must be an integer, written without fraction or exponent", clip(string(num)))
			return
		}
		n, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || n > maxSafe || n < -maxSafe {
			w.fail("%s is outside ±(2^53−1), where every reader reads an integer alike", clip(string(num)))
		}
		return
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		w.fail("the number %s is out of range", clip(string(num)))
		return
	}
	if s == safeNumber && (f > maxSafe || f < -maxSafe) {
		w.fail("%s is outside ±(2^53−1)", clip(string(num)))
	}
}

const maxSafe = 1<<53 - 1

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func (w *walker) literal() {
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(w.msg[w.pos:], []byte(lit)) {
			w.pos += len(lit)
			return
		}
	}
	w.fail("not a JSON value")
}

// skipValue moves past the value at w.pos without checking it (a call's
// arguments, which tools/input reads), reporting false at a value that
// does not end.
func (w *walker) skipValue() bool {
	w.pos = w.skipSpace(w.pos)
	if w.pos >= len(w.msg) {
		return false
	}
	switch w.msg[w.pos] {
	case '"':
		end, _ := w.stringEnd(w.pos)
		w.pos = end
		return end >= 0
	case '{', '[':
		depth := 0
		for w.pos < len(w.msg) {
			switch w.msg[w.pos] {
			case '"':
				end, _ := w.stringEnd(w.pos)
				if end < 0 {
					return false
				}
				w.pos = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					w.pos++
					return true
				}
			}
			w.pos++
		}
		return false
	default: // a number or a literal
		for w.pos < len(w.msg) && bytes.IndexByte([]byte(",}] \t\n\r"), w.msg[w.pos]) < 0 {
			w.pos++
		}
		return true
	}
}

// decodeString decodes a JSON string token (quotes included), reporting
// false for an escaped lone surrogate.
func decodeString(raw []byte) (string, bool) {
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body), true
	}
	var b strings.Builder
	b.Grow(len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(body) {
			return b.String(), false
		}
		switch body[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, ok := hex4(body[i+1:])
			if !ok {
				return b.String(), false
			}
			i += 4 // at the escape's last digit
			if utf16.IsSurrogate(r) {
				// A high surrogate must be followed by an escaped low one.
				if r >= 0xdc00 || i+6 >= len(body) || body[i+1] != '\\' || body[i+2] != 'u' {
					return b.String(), false
				}
				r2, ok := hex4(body[i+3:])
				if !ok || r2 < 0xdc00 || r2 > 0xdfff {
					return b.String(), false
				}
				i += 6
				r = utf16.DecodeRune(r, r2)
			}
			b.WriteRune(r)
		default:
			b.WriteByte(body[i]) // " \ /
		}
	}
	return b.String(), true
}

func hex4(h []byte) (rune, bool) {
	if len(h) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(h[:4]), 16, 16)
	return rune(n), err == nil
}

// repaired is the message with each string to repair re-encoded: its
// invalid UTF-8 and lone surrogates as U+FFFD, everything else as it was.
func (w *walker) repaired() []byte {
	out := make([]byte, 0, len(w.msg)+16*len(w.repairs))
	last := 0
	for _, r := range w.repairs {
		out = append(out, w.msg[last:r.start]...)
		out = appendRepaired(out, w.msg[r.start:r.end])
		last = r.end
	}
	return append(out, w.msg[last:]...)
}

// appendRepaired appends the string token raw with its invalid UTF-8 and
// lone surrogate escapes replaced by U+FFFD.
func appendRepaired(out, raw []byte) []byte {
	body := raw[1 : len(raw)-1]
	out = append(out, '"')
	for i := 0; i < len(body); {
		c := body[i]
		if c == '\\' && i+1 < len(body) && body[i+1] == 'u' {
			r, ok := hex4(body[i+2:])
			if ok && utf16.IsSurrogate(r) {
				if r < 0xdc00 && i+12 <= len(body) && body[i+6] == '\\' && body[i+7] == 'u' {
					if r2, ok := hex4(body[i+8:]); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
						out = append(out, body[i:i+12]...)
						i += 12
						continue
					}
				}
				out = append(out, `\ufffd`...)
				i += 6
				continue
			}
		}
		if c == '\\' && i+1 < len(body) {
			out = append(out, body[i:i+2]...)
			i += 2
			continue
		}
		r, size := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && size <= 1 {
			out = append(out, "\uFFFD"...)
			i++
			continue
		}
		out = append(out, body[i:i+size]...)
		i += size
	}
	return append(out, '"')
}
