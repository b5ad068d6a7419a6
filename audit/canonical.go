package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"unicode/utf8"
)

// Canonical is raw re-encoded with sorted object keys, no insignificant
// whitespace, numbers exactly as written, and no HTML escaping: the same
// arguments give the same bytes however a caller spaced and ordered them.
// Empty or null arguments are {}. A key that appears twice keeps its last
// value, as a JSON decoder does. The bytes are those encoding/json writes
// for the decoded value (json.Decoder.UseNumber, then an Encoder with
// SetEscapeHTML(false)).
func Canonical(raw json.RawMessage) ([]byte, error) {
	var b bytes.Buffer
	if _, err := writeCanonical(&b, raw); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var errNotJSON = errors.New("arguments: not one JSON value")

// writeCanonical writes Canonical(raw) to w, and how many bytes it wrote;
// nothing when raw is not one JSON value. Arguments can be as large as a
// message (16 MiB and more): decoding them into maps and slices to sort
// their keys would cost fifty times their size, so the canonical bytes are
// written as raw is read, and only what sorting needs is held: where each
// member of the objects being written starts.
func writeCanonical(w io.Writer, raw json.RawMessage) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return w.Write([]byte("{}"))
	}
	if !json.Valid(raw) || len(raw) > math.MaxInt32 { // json.Valid also bounds the nesting (10000)
		return 0, errNotJSON
	}
	cw := &countingWriter{w: w}
	c := &canonicalizer{src: raw, out: bufio.NewWriterSize(cw, 32<<10)}
	c.enc = json.NewEncoder(&c.buf)
	c.enc.SetEscapeHTML(false)
	c.indexMemberValues()
	c.value(0)
	if err := c.out.Flush(); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// canonicalizer writes the canonical form of src, which json.Valid accepted.
type canonicalizer struct {
	src []byte
	out *bufio.Writer
	// starts and ends locate the objects and arrays that are the values of
	// object members, in the order they start: writing an object's members
	// in key order means stepping over each value once to find the next key.
	starts, ends []int32
	members      []member // of the objects being written, innermost last
	// decoded holds the keys that hold escapes, decoded, end to end
	// (member.dec, member.decEnd): one buffer, not a slice each, so that
	// an object of many small members costs a few bytes a member.
	decoded []byte
	buf     bytes.Buffer
	enc     *json.Encoder // onto buf, for strings that need escaping
}

// indexMemberValues finds, in one pass, where each object or array that is
// the value of an object member ends.
func (c *canonicalizer) indexMemberValues() {
	var open []int  // indexes into starts of the containers open, -1 for those not indexed
	prev := byte(0) // the last byte outside strings that is not whitespace
	for i := 0; i < len(c.src); i++ {
		switch b := c.src[i]; b {
		case '"':
			i = c.stringEnd(i) - 1
			prev = '"'
		case '{', '[':
			k := -1
			if prev == ':' {
				k = len(c.starts)
				c.starts = append(c.starts, int32(i))
				c.ends = append(c.ends, 0)
			}
			open = append(open, k)
			prev = b
		case '}', ']':
			if k := open[len(open)-1]; k >= 0 {
				c.ends[k] = int32(i)
			}
			open = open[:len(open)-1]
			prev = b
		case ' ', '\t', '\r', '\n':
		default:
			prev = b
		}
	}
}

func (c *canonicalizer) space(i int) int {
	for i < len(c.src) {
		switch c.src[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd is the index after the string that starts at i (its quote).
func (c *canonicalizer) stringEnd(i int) int {
	for i++; ; i++ {
		switch c.src[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// scalarEnd is the index after the number or literal at i.
func (c *canonicalizer) scalarEnd(i int) int {
	for i < len(c.src) {
		switch c.src[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

// skip is the index after the value at i, a member's value.
func (c *canonicalizer) skip(i int) int {
	switch c.src[i] {
	case '{', '[':
		k, _ := slices.BinarySearch(c.starts, int32(i))
		return int(c.ends[k]) + 1
	case '"':
		return c.stringEnd(i)
	}
	return c.scalarEnd(i)
}

// value writes the value at i (or after whitespace there) and returns the
// index after it.
func (c *canonicalizer) value(i int) int {
	i = c.space(i)
	switch c.src[i] {
	case '{':
		return c.object(i)
	case '[':
		c.out.WriteByte('[')
		i = c.space(i + 1)
		if c.src[i] == ']' {
			c.out.WriteByte(']')
			return i + 1
		}
		for {
			i = c.space(c.value(i))
			if c.src[i] == ']' {
				c.out.WriteByte(']')
				return i + 1
			}
			c.out.WriteByte(',')
			i++
		}
	case '"':
		end := c.stringEnd(i)
		c.string(c.src[i:end])
		return end
	}
	end := c.scalarEnd(i)
	c.out.Write(c.src[i:end]) // a number exactly as written, or true, false, null
	return end
}

// member is one member of an object being written: where its key and
// value start in src, and its key decoded when the key holds escapes
// (decoded[dec:decEnd]), else dec is -1.
type member struct {
	key, keyEnd, val, dec, decEnd int32
}

func (c *canonicalizer) keyOf(m member) []byte {
	if m.dec >= 0 {
		return c.decoded[m.dec:m.decEnd]
	}
	return c.src[m.key+1 : m.keyEnd-1]
}

func (c *canonicalizer) object(i int) int {
	i = c.space(i + 1)
	if c.src[i] == '}' {
		c.out.WriteString("{}")
		return i + 1
	}
	base, decodedBase := len(c.members), len(c.decoded)
	for {
		i = c.space(i)
		keyEnd := c.stringEnd(i)
		m := member{key: int32(i), keyEnd: int32(keyEnd), dec: -1}
		if !plain(c.src[i+1 : keyEnd-1]) {
			var k string
			_ = json.Unmarshal(c.src[i:keyEnd], &k) // valid: json.Valid said so
			m.dec = int32(len(c.decoded))
			c.decoded = append(c.decoded, k...)
			m.decEnd = int32(len(c.decoded))
		}
		i = c.space(c.space(keyEnd) + 1) // past ':'
		m.val = int32(i)
		c.members = append(c.members, m)
		i = c.space(c.skip(i))
		if c.src[i] == '}' {
			i++
			break
		}
		i++ // ','
	}
	// encoding/json writes a map's keys in the order of their bytes; a
	// decoder keeps the last value of a key given twice.
	ms := c.members[base:] // the objects written below append after it
	slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(c.keyOf(a), c.keyOf(b)) })
	c.out.WriteByte('{')
	first := true
	for j, m := range ms {
		if j+1 < len(ms) && bytes.Equal(c.keyOf(m), c.keyOf(ms[j+1])) {
			continue
		}
		if !first {
			c.out.WriteByte(',')
		}
		first = false
		c.string(c.src[m.key:m.keyEnd])
		c.out.WriteByte(':')
		c.value(int(m.val))
	}
	c.out.WriteByte('}')
	c.members, c.decoded = c.members[:base], c.decoded[:decodedBase]
	return i
}

// string writes a JSON string (quotes included) as encoding/json writes
// the string it decodes to: unchanged when it holds no escape and nothing
// the encoder would escape, else decoded and encoded again.
func (c *canonicalizer) string(quoted []byte) {
	if plain(quoted[1 : len(quoted)-1]) {
		c.out.Write(quoted)
		return
	}
	var s string
	_ = json.Unmarshal(quoted, &s)
	c.buf.Reset()
	_ = c.enc.Encode(s)
	c.out.Write(bytes.TrimSuffix(c.buf.Bytes(), []byte("\n")))
}

// plain reports whether a string's raw content is what encoding/json would
// write for it: no escape, valid UTF-8, no U+2028 or U+2029 (which the
// encoder escapes). Control characters cannot be there: json.Valid refuses
// them in a string.
func plain(content []byte) bool {
	return bytes.IndexByte(content, '\\') < 0 && utf8.Valid(content) &&
		!bytes.Contains(content, []byte("\u2028")) && !bytes.Contains(content, []byte("\u2029"))
}
