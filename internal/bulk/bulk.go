// Package bulk moves large JSON string values past go-sdk by reference.
//
// A tool call carrying an 8 MiB string would otherwise be decoded and
// re-encoded by go-sdk several times on its way through colibri. The
// connections colibri owns (its stdio face, its HTTP face around go-sdk's
// handlers, and its hosted connection) see every message as bytes before
// go-sdk does, and after it is done. So on the
// way in, Lift replaces each large string literal of a message with a short
// reference literal and keeps the original bytes in a Table; go-sdk then
// decodes, routes and re-encodes a message of a few hundred bytes. On the way
// out, Lower puts the original literals back, without copying them:
//
//	t := bulk.New(bulk.DefaultMin)
//	lifted, refs := t.Lift(msg, "params", "arguments") // msg.params.arguments.text: "colibri-bulk-…-1"
//	…                                                  // go-sdk moves lifted
//	segs, err := t.Lower(out)                          // out as go-sdk wrote it
//	if err != nil { … }                                // a stray marker: never send out
//	net.Buffers(segs).WriteTo(w)
//	t.Release(refs...)
//
// A reference literal is `"colibri-bulk-` + 24 random hex digits + `-` + a
// decimal id + `"`: only [a-z0-9-], which no JSON encoder escapes, so what
// go-sdk writes back is byte for byte what it read. The random part (the
// marker) is per Table and never leaves colibri: a reference is resolved by
// Lower only when the marker is right, so a caller cannot name another
// caller's value.
//
// Only "clean" literals are lifted: valid UTF-8, and no escaped surrogate
// but in a pair (a high one, then a low one: the character they name).
// Such a literal decodes to exactly what it says, so writing it back
// unchanged means the same as decoding and re-encoding it would.
//
// # Ownership
//
// One rule: a reference belongs to the caller's request it came with — the
// request whose message it was lifted from, or whose call a hosted answer
// it was lifted from answers. That request is an Owner, and it keeps its
// references while anyone holds it:
//
//   - the face that read the request, from Own until it is done with it
//     (Owner.Done: the stdio face once it has written the answer, or its
//     connection has closed; the HTTP face once the POST's handler has
//     returned);
//   - the call, until it has returned and its context has ended, whichever
//     is last (Join, by the references its arguments carry: no id, header
//     or map links the two); go-sdk ends that context after the answer is
//     written, and a cancelled call's context ends before the call returns.
//
// The last to let go releases them all. A call that begins after its
// request was let go (an HTTP caller gone before the call began) finds its
// references released, and Join says so: it must not run. A hosted
// server's answer is lifted for the Owner its call's context carries
// (OwnerFrom, Adopt). Release is what frees the memory: an entry keeps
// sub-slices of the message (or of the pieces) it was lifted from.
//
// # The safety net
//
// Lower refuses any occurrence of the marker that is not a whole reference
// literal to a live entry — inside a longer string (an error message quoting
// an argument), after an escaped quote, a truncated one, an unknown or
// released id. The caller must then not send the message: a marker passed
// through would be a value silently lost, and Lower never does that. Errors
// name the byte offset and the id, never the value or the marker.
//
// Go code that needs the real value of a decoded message (colibri's own
// tools) uses Value or Resolve.
package bulk

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// DefaultMin is the smallest literal lifted, in bytes, quotes included.
const DefaultMin = 64 << 10

// maxDepth is the deepest nesting encoding/json accepts (its scanner's
// maxNestingDepth): a message nested deeper is not valid JSON, so scan stops
// there instead of keeping a stack as long as the message (25 bytes a level:
// a line of 16 MiB of "[" would cost gigabytes).
const maxDepth = 10000

// maxIDDigits bounds the id of a reference literal: a uint64 has at most 20
// decimal digits.
const maxIDDigits = 20

// Table holds the lifted literals of one colibri process (or one pair of
// connections). It is safe for concurrent use. A nil *Table is a disabled
// one: nothing is lifted, and Lower passes every message through.
type Table struct {
	min    int
	marker string // "colibri-bulk-" + 24 hex + "-"

	mu      sync.Mutex
	next    uint64
	entries map[Ref][][]byte // the literal, quotes included: sub-slices of the lifted message
	held    int64            // the bytes of entries
	owners  map[Ref]*Owner   // the owner of each entry that has one (Own, Adopt)

	ownerEnded func() // tests only: called after an owner has released its references
}

// Ref is one lifted literal, as returned by Lift. Its lifter hands it to
// an Owner (Own, Adopt), or releases it (Release).
type Ref uint64

// New returns an empty table that lifts literals of at least min bytes
// (quotes included); min <= 0 means DefaultMin. Its marker is random
// (96 bits from crypto/rand), so that no message from outside can contain a
// reference of this table.
func New(min int) *Table {
	if min <= 0 {
		min = DefaultMin
	}
	var b [12]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return &Table{
		min:     min,
		marker:  "colibri-bulk-" + hex.EncodeToString(b[:]) + "-",
		entries: make(map[Ref][][]byte),
		owners:  make(map[Ref]*Owner),
	}
}

// Lift returns msg with every string literal of at least min bytes that is
// a value (never an object key) somewhere inside the member reached from the
// top-level object by the keys under, replaced by a reference literal; and
// the references made, which the caller now owns.
//
// Lift(msg, "params", "arguments") lifts inside msg.params.arguments, at any
// depth below it, in objects and arrays; Lift(msg, "result") inside
// msg.result. The member itself counts: if msg.result is a large string, it
// is lifted. With no keys, every string value of msg is lifted, msg itself
// too if it is one. Keys are matched byte for byte as written: a key written
// with escapes does not match, and then nothing is lifted, which is always
// correct.
//
// msg may be any bytes. Only literals that are valid JSON strings are
// lifted, and each is replaced by another valid JSON string, so the lifted
// message is valid JSON exactly when msg is: a caller checks the smaller
// one (json.Valid), not both. (String tokens are found alike by any JSON
// lexer, whatever surrounds them; an error elsewhere stays where it was.)
// msg must not be modified while a reference to it is live: the entries
// keep sub-slices of msg (no copy). The lifted message is a new slice. When
// nothing is lifted, Lift returns msg itself and nil.
func (t *Table) Lift(msg []byte, under ...string) ([]byte, []Ref) {
	return t.lift([][]byte{msg}, under, nil)
}

// LiftParts is Lift of the message that is parts joined, without joining
// them: a lifted literal is kept as sub-slices of the parts, so a line read
// in pieces is held once. The lifted message is a new slice; with nothing
// lifted, it is parts joined (the one part itself, if there is one).
func (t *Table) LiftParts(parts [][]byte, under ...string) ([]byte, []Ref) {
	return t.lift(parts, under, nil)
}

// LiftResult lifts, from a JSON-RPC response carrying an MCP result, the
// strings the result holds as text: every "text" member at any depth
// under "result" (text content, embedded text resources), and every string
// under "result"."structuredContent". Other members are never lifted: go-sdk
// decodes the base64 of "data" and "blob" to bytes, and a reference is not
// base64.
func (t *Table) LiftResult(msg []byte) ([]byte, []Ref) {
	return t.LiftResultParts([][]byte{msg})
}

// LiftResultParts is LiftResult of parts joined, as LiftParts is Lift.
func (t *Table) LiftResultParts(parts [][]byte) ([]byte, []Ref) {
	return t.lift(parts, []string{"result"}, func(key, first []byte) bool {
		return string(key) == "text" || string(first) == "structuredContent"
	})
}

// Lifted is how many literals the table has lifted since it was made (for
// tests: that large strings crossed by reference).
func (t *Table) Lifted() uint64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.next
}

// Flatten is msg lowered into one slice: for Go code that reads a message
// colibri received (its own tools' input, an audit digest). msg without
// the marker is returned as it is; so is msg whose lowering fails (a marker
// it does not hold is the caller's own text, then).
func (t *Table) Flatten(msg []byte) []byte {
	parts, err := t.Lower(msg)
	if err != nil || len(parts) == 1 {
		return msg
	}
	return bytes.Join(parts, nil)
}

// Joined is msg lowered into one slice, or Lower's error: for a message
// that leaves colibri whole through a connection that does not lower (a
// remote upstream's), where a reference that cannot be put back must stop
// the message, not travel as text.
func (t *Table) Joined(msg []byte) ([]byte, error) {
	parts, err := t.Lower(msg)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return bytes.Join(parts, nil), nil
}

// LoweredLen is the length msg has once lowered: what a caller is sent
// (an audit record's result_bytes). msg whose lowering fails counts as it is.
func (t *Table) LoweredLen(msg []byte) int {
	parts, err := t.Lower(msg)
	if err != nil {
		return len(msg)
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n
}

// pick narrows what lift takes below the path: key is the member's own key
// (nil for an array element), first the first key below the path's end on
// the way to it (nil when there is none).
type pick func(key, first []byte) bool

func (t *Table) lift(parts [][]byte, under []string, want pick) ([]byte, []Ref) {
	r := newRope(parts)
	if t == nil || r.len() < t.min {
		return join(parts), nil
	}
	spans := t.scan(r, under, want)
	if len(spans) == 0 {
		return join(parts), nil
	}
	size := r.len()
	for _, sp := range spans {
		size -= sp.end - sp.start
	}
	size += len(spans) * (2 + len(t.marker) + maxIDDigits)

	refs := make([]Ref, len(spans))
	lits := make([][][]byte, len(spans))
	for k, sp := range spans {
		lits[k] = r.pieces(sp.start, sp.end)
	}
	t.mu.Lock()
	for k, sp := range spans {
		t.next++
		refs[k] = Ref(t.next)
		t.entries[refs[k]] = lits[k]
		t.held += int64(sp.end - sp.start)
	}
	t.mu.Unlock()

	out := make([]byte, 0, size)
	prev := 0
	for k, sp := range spans {
		out = r.appendRange(out, prev, sp.start)
		out = t.appendRef(out, refs[k])
		prev = sp.end
	}
	return r.appendRange(out, prev, r.len()), refs
}

// join is parts as one slice: the one part itself, or a copy.
func join(parts [][]byte) []byte {
	if len(parts) == 1 {
		return parts[0]
	}
	return bytes.Join(parts, nil)
}

// appendRef appends the reference literal of r, quotes included.
func (t *Table) appendRef(out []byte, r Ref) []byte {
	out = append(out, '"')
	out = append(out, t.marker...)
	out = strconv.AppendUint(out, uint64(r), 10)
	return append(out, '"')
}

// span is a string literal in a message: the byte at offset start is its
// opening quote, the one at end-1 its closing one.
type span struct{ start, end int }

// scan returns the literals Lift replaces, in order: one pass over msg that
// tracks the container kinds (to tell keys from values) and how many of the
// keys under the current position is inside. Input that turns out not to be
// valid JSON gives what was found so far or nothing; it never panics.
// Whatever it gives, each span is a whole string token as a JSON lexer
// reads msg (a quote outside a string always opens one).
func (t *Table) scan(msg *rope, under []string, want pick) []span {
	var (
		spans     []span
		stackBuf  [32]byte
		stack     = stackBuf[:0] // '{' or '[' per open container
		keysBuf   [32][]byte
		keys      = keysBuf[:0] // per open container: its member's key being read (objects), nil (arrays)
		matched   int           // under[:matched] are the keys of the open members on the path
		expectKey bool          // the next string is an object key
	)
	var (
		cur      []byte // the piece holding offset i, from offset curStart
		curStart int
	)
	for i, n := 0, msg.len(); i < n; {
		if i < curStart || i-curStart >= len(cur) {
			k := msg.part(i)
			cur, curStart = msg.parts[k], msg.starts[k]
		}
		switch c := cur[i-curStart]; c {
		case '{', '[':
			if len(stack) == maxDepth {
				return nil // not valid JSON
			}
			stack = append(stack, c)
			keys = append(keys, nil)
			expectKey = c == '{'
			i++
		case '}', ']':
			d := len(stack)
			if d == 0 {
				return nil
			}
			if matched == d { // the matched member was this object's last
				matched = d - 1
			}
			stack = stack[:d-1]
			keys = keys[:d-1]
			expectKey = false
			i++
		case ',':
			d := len(stack)
			if d == 0 {
				return nil
			}
			if matched == d { // the matched member's value ended
				matched = d - 1
			}
			expectKey = stack[d-1] == '{'
			i++
		case '"':
			end := msg.stringEnd(i)
			if end < 0 {
				return nil
			}
			d := len(stack)
			if expectKey {
				// A key of the object at depth d continues the path if the
				// path so far led here.
				if matched == d-1 && d-1 < len(under) && msg.equal(i+1, end, under[d-1]) {
					matched = d
				}
				keys[d-1] = msg.key(i+1, end)
				expectKey = false
			} else if matched == len(under) && end+1-i >= t.min && picked(want, keys, len(under)) && msg.clean(i+1, end) {
				spans = append(spans, span{i, end + 1})
			}
			i = end + 1
		default: // white space, ':', and the bytes of numbers, true, false, null
			// Up to the next byte that matters, in this piece.
			j := i - curStart + 1
			for j < len(cur) && !structural[cur[j]] {
				j++
			}
			i = curStart + j
		}
	}
	return spans
}

// structural marks the bytes scan acts on; it skips runs of the others.
var structural = [256]bool{'{': true, '[': true, '}': true, ']': true, ',': true, '"': true}

// picked applies want to the value being read, whose containers' keys are
// keys; the path's end is at depth n.
func picked(want pick, keys [][]byte, n int) bool {
	if want == nil {
		return true
	}
	var key, first []byte
	if d := len(keys); d > 0 {
		key = keys[d-1]
	}
	if len(keys) > n {
		first = keys[n]
	}
	return want(key, first)
}

// isHex4 reports whether h is 4 hexadecimal digits.
func isHex4(h []byte) bool {
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// surrogate tells whether the 4 hex digits h name a UTF-16 surrogate:
// 'h' for a high one (U+D800–U+DBFF), 'l' for a low one (U+DC00–U+DFFF),
// 0 for neither.
func surrogate(h []byte) byte {
	if h[0] != 'd' && h[0] != 'D' {
		return 0
	}
	switch h[1] {
	case '8', '9', 'a', 'b', 'A', 'B':
		return 'h'
	case 'c', 'd', 'e', 'f', 'C', 'D', 'E', 'F':
		return 'l'
	}
	return 0
}

// Release drops entries. Unknown or already released refs are ignored.
func (t *Table) Release(refs ...Ref) {
	if t == nil || len(refs) == 0 {
		return
	}
	t.mu.Lock()
	t.releaseLocked(refs)
	t.mu.Unlock()
}

// releaseLocked is Release with t.mu held.
func (t *Table) releaseLocked(refs []Ref) {
	for _, r := range refs {
		if lit, ok := t.entries[r]; ok {
			for _, p := range lit {
				t.held -= int64(len(p))
			}
			delete(t.entries, r)
			delete(t.owners, r)
		}
	}
}

// Held is the bytes of the table's live entries.
func (t *Table) Held() int64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.held
}

// Len is the number of live entries (for tests and leak checks).
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// ErrReleased is Lower's error for a reference the table issued and has
// since released: the message was written after every holder of the
// request that owned the string had let go (a call cancelled as its answer
// was being written, a session closed), not a reference the table never
// made. Lower
// returns it only when released references are all that is wrong with the
// message: any other fault in it is the error instead.
var ErrReleased = errors.New("the string it stood for was released")

// Lower returns msg with every reference literal replaced by the literal it
// stands for, as segments that, written in order, are the message (the
// values are not copied: they are the sub-slices Lift kept). msg without the
// marker comes back as [][]byte{msg}.
//
// Any occurrence of the marker that is not a whole reference literal to a
// live entry — inside a longer string, after an escaped quote, outside a
// string, an unknown or released id, a truncated reference — is an error, and
// the caller must not send msg: a marker is never passed through. The error
// names the byte offset (and the id), never the value or the marker.
func (t *Table) Lower(msg []byte) ([][]byte, error) {
	if t == nil {
		return [][]byte{msg}, nil
	}
	marker := []byte(t.marker)
	next := bytes.Index(msg, marker) // the next occurrence not yet accounted for
	if next < 0 {
		return [][]byte{msg}, nil
	}
	var segs [][]byte
	prev := 0 // msg[prev:] is not in segs yet
	r := newRope([][]byte{msg})
	// The first released reference; the walk goes on, so that any other
	// fault later in msg (a stray marker, an unknown id) is what is reported:
	// ErrReleased says released references are msg's only problem.
	var released error
	// Walk the string literals from the start: only the walk knows whether a
	// quote before a marker opens a literal or is escaped inside one.
	for i := 0; next >= 0; {
		k := bytes.IndexByte(msg[i:], '"')
		if k < 0 || i+k > next {
			return nil, fmt.Errorf("bulk: reference marker at byte %d is outside a string", next)
		}
		open := i + k
		end := r.stringEnd(open)
		if end < 0 {
			return nil, fmt.Errorf("bulk: reference marker at byte %d is in an unterminated string", next)
		}
		if next > end { // this literal holds no marker
			i = end + 1
			continue
		}
		if next != open+1 {
			return nil, fmt.Errorf("bulk: reference marker at byte %d is inside a longer string", next)
		}
		digits := msg[next+len(marker) : end]
		id, ok := parseID(digits)
		if !ok {
			return nil, fmt.Errorf("bulk: reference at byte %d is not a whole reference (marker, decimal id, quote)", next)
		}
		t.mu.Lock()
		lit, live := t.entries[id]
		issued := id >= 1 && uint64(id) <= t.next
		t.mu.Unlock()
		switch {
		case !live && issued:
			if released == nil {
				released = fmt.Errorf("bulk: reference %d at byte %d: %w", id, next, ErrReleased)
			}
		case !live:
			return nil, fmt.Errorf("bulk: reference %d at byte %d is unknown", id, next)
		case released == nil:
			segs = append(segs, msg[prev:open])
			segs = append(segs, lit...)
			prev = end + 1
		}
		i = end + 1
		if j := bytes.Index(msg[i:], marker); j >= 0 {
			next = i + j
		} else {
			next = -1
		}
	}
	if released != nil {
		return nil, released
	}
	return append(segs, msg[prev:]), nil
}

// parseID parses the id of a reference literal: decimal, as
// strconv.AppendUint writes it (no sign, no leading zero), not 0.
func parseID(b []byte) (Ref, bool) {
	if len(b) == 0 || len(b) > maxIDDigits || b[0] == '0' {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return Ref(n), true
}

// ref parses s as a reference of t (the decoded string: no quotes).
func (t *Table) ref(s string) (Ref, bool) {
	if len(s) <= len(t.marker) || s[:len(t.marker)] != t.marker {
		return 0, false
	}
	return parseID([]byte(s[len(t.marker):]))
}

// lookup is the literal s refers to (its pieces), if s is a live reference
// of t.
func (t *Table) lookup(s string) ([][]byte, bool) {
	if t == nil {
		return nil, false
	}
	r, ok := t.ref(s)
	if !ok {
		return nil, false
	}
	t.mu.Lock()
	lit, ok := t.entries[r]
	t.mu.Unlock()
	return lit, ok
}

// Size is the byte length of the literal (quotes included) that the
// reference s refers to, and true; or 0, false. s is the reference as a
// decoded string, without quotes.
func (t *Table) Size(s string) (int, bool) {
	lit, ok := t.lookup(s)
	if !ok {
		return 0, false
	}
	n := 0
	for _, p := range lit {
		n += len(p)
	}
	return n, true
}

// IsRef reports whether s (a decoded string, without quotes) is a reference
// of t, live or released: text that stood for a lifted string, never the
// caller's own, and never to be shown (it carries t's marker).
func (t *Table) IsRef(s string) bool {
	if t == nil {
		return false
	}
	_, ok := t.ref(s)
	return ok
}

// Value returns the decoded string a reference string stands for (what
// encoding/json.Unmarshal of the literal gives), and true; or s, false when s
// is not a live reference of t. The result is a copy: it stays valid after
// the reference is released.
func (t *Table) Value(s string) (string, bool) {
	pieces, ok := t.lookup(s)
	if !ok {
		return s, false
	}
	n, escaped := 0, false
	for _, p := range pieces {
		n += len(p)
		escaped = escaped || bytes.IndexByte(p, '\\') >= 0
	}
	if !escaped {
		// A clean literal with no escape is its bytes: copied once, from
		// the pieces, without the quotes.
		var b strings.Builder
		b.Grow(n - 2)
		off := 0
		for _, p := range pieces {
			b.Write(p[max(0, 1-off):min(len(p), n-1-off)])
			off += len(p)
		}
		return b.String(), true
	}
	lit := join(pieces)
	var v string
	if err := json.Unmarshal(lit, &v); err != nil {
		return s, false // Lift was given invalid JSON, against its contract
	}
	return v, true
}

// Resolve returns v — a value as encoding/json decodes into any
// (map[string]any, []any, string, float64 or json.Number, bool, nil), or
// Typed's — with every reference string and every Lifted replaced by its
// value. v is not modified:
// containers on the path to a replaced string are copied, others shared.
// With no reference in v, Resolve returns v itself.
func (t *Table) Resolve(v any) any {
	if t == nil {
		return v
	}
	r, _ := t.resolve(v)
	return r
}

// resolve is Resolve, and whether anything was replaced.
func (t *Table) resolve(v any) (any, bool) {
	return walk(v, func(v any) (any, bool) {
		switch v := v.(type) {
		case string:
			if s, ok := t.Value(v); ok {
				return s, true
			}
		case Lifted:
			if s, ok := v.Text(); ok {
				return s, true
			}
			return v.ref, true // released: the reference, as the string it was
		}
		return v, false
	})
}

// Lifted is a large string of a decoded message that stayed in its Table,
// moved by reference: a value of its own type, so that no reader can take
// it for the string it stands for. Text is the string; the forwarder writes
// the reference literal (Untyped), which the connection lowers on the way
// out.
//
//	v := t.Typed(decoded)            // {"text": Lifted{…}}
//	s, ok := v["text"].(bulk.Lifted).Text()
type Lifted struct {
	t   *Table
	ref string
}

// Text is the string l stands for (a copy), and true; or "", false once
// its reference was released.
func (l Lifted) Text() (string, bool) {
	s, ok := l.t.Value(l.ref)
	if !ok {
		return "", false
	}
	return s, true
}

// Size is the length of the JSON literal l stands for, quotes included
// (0 once released).
func (l Lifted) Size() int {
	n, _ := l.t.Size(l.ref)
	return n
}

// Typed returns v, a value as encoding/json decodes into any, with every
// reference string of t replaced by a Lifted. v is not modified: containers
// on the path to a replaced string are copied, others shared.
func (t *Table) Typed(v any) any {
	if t == nil {
		return v
	}
	r, _ := walk(v, func(v any) (any, bool) {
		if s, ok := v.(string); ok && t.IsRef(s) {
			return Lifted{t: t, ref: s}, true
		}
		return v, false
	})
	return r
}

// Untyped returns v with every Lifted replaced by the reference string it
// was decoded from: for a reader that needs only a string there, of any
// content (a schema check that reads no string's value), and for the
// forwarder.
func Untyped(v any) any {
	r, _ := walk(v, func(v any) (any, bool) {
		if l, ok := v.(Lifted); ok {
			return l.ref, true
		}
		return v, false
	})
	return r
}

// walk returns v with f applied to every value that is not a map or a
// slice, and whether f replaced any; containers on the path to a replaced
// value are copied, others shared.
func walk(v any, f func(any) (any, bool)) (any, bool) {
	switch c := v.(type) {
	case map[string]any:
		var out map[string]any
		for k, e := range c {
			r, changed := walk(e, f)
			if !changed {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(c))
				for k2, e2 := range c {
					out[k2] = e2
				}
			}
			out[k] = r
		}
		if out != nil {
			return out, true
		}
		return v, false
	case []any:
		var out []any
		for i, e := range c {
			r, changed := walk(e, f)
			if !changed {
				continue
			}
			if out == nil {
				out = append([]any(nil), c...)
			}
			out[i] = r
		}
		if out != nil {
			return out, true
		}
		return v, false
	}
	return f(v)
}
