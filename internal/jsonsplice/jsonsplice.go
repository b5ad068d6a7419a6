// Package jsonsplice finds a JSON object's members by their byte offsets, so
// that one member can be added, replaced or removed while every other byte
// of the document (a person's layout, key order, and in JSONC comments) stays
// as it is. It does not decode values; the caller validates the result.
//
//	o, err := jsonsplice.Parse(doc, 0)
//	if i := o.Find("servers"); i >= 0 { servers, err = jsonsplice.Parse(doc, o.Members[i].Value) }
//	doc = servers.Insert(doc, servers.MemberIndent(doc, "    "), []byte(`"new": {}`))
//
// For JSONC, scan a copy with comments blanked (same offsets) and splice the
// original.
package jsonsplice

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

func Splice(doc []byte, from, to int, with []byte) []byte {
	out := make([]byte, 0, len(doc)-(to-from)+len(with))
	out = append(out, doc[:from]...)
	out = append(out, with...)
	return append(out, doc[to:]...)
}

// Indent is a JSON value indented by two spaces, its lines after the first
// starting with prefix.
func Indent(v json.RawMessage, prefix string) []byte {
	var b bytes.Buffer
	if err := json.Indent(&b, v, prefix, "  "); err != nil {
		return v
	}
	return b.Bytes()
}

// LineIndent is the white space that starts the line holding offset at.
func LineIndent(doc []byte, at int) string {
	start := bytes.LastIndexByte(doc[:at], '\n') + 1
	i := start
	for i < at && (doc[i] == ' ' || doc[i] == '\t') {
		i++
	}
	return string(doc[start:i])
}

// object is where a JSON object and its members are in a document.
type Object struct {
	Open, Close int // the offsets of { and }
	Members     []Member
}

type Member struct {
	Name       string
	Key        int // offset of the key's opening quote
	Value, End int // the value's first byte, and one past its last
}

func (o Object) Find(name string) int {
	for i, m := range o.Members {
		if m.Name == name {
			return i
		}
	}
	return -1
}

// MemberIndent is the indentation of o's members: that of its last one, or
// def when it has none (or they share a line with the brace).
func (o Object) MemberIndent(doc []byte, def string) string {
	if n := len(o.Members); n > 0 && bytes.LastIndexByte(doc[o.Open:o.Members[n-1].Key], '\n') >= 0 {
		return LineIndent(doc, o.Members[n-1].Key)
	}
	if bytes.IndexByte(doc[o.Open:o.Close], '\n') < 0 {
		return LineIndent(doc, o.Open) + def[len(def)-2:]
	}
	return def
}

// Insert adds body (a "name": value member) as o's last member, on a line of
// its own at indentation ind.
func (o Object) Insert(doc []byte, ind string, body []byte) []byte {
	if n := len(o.Members); n > 0 {
		return Splice(doc, o.Members[n-1].End, o.Members[n-1].End, append([]byte(",\n"+ind), body...))
	}
	closing := "\n" + LineIndent(doc, o.Open)
	return Splice(doc, o.Open+1, o.Close, append(append([]byte("\n"+ind), body...), closing...))
}

// scanner finds objects and their members in a JSON document that Parse
// accepts (or that is at least well-formed): it skips values without
// decoding them.
type scanner struct{ data []byte }

// Parse finds the JSON object at offset at of doc (after white space).
func Parse(doc []byte, at int) (Object, error) {
	s := scanner{data: doc}
	return s.object(s.skip(at))
}

var errShape = errors.New("not a JSON object")

func (s scanner) skip(i int) int {
	for i < len(s.data) && strings.IndexByte(" \t\r\n", s.data[i]) >= 0 {
		i++
	}
	return i
}

func (s scanner) object(i int) (Object, error) {
	d := s.data
	if i >= len(d) || d[i] != '{' {
		return Object{}, errShape
	}
	o := Object{Open: i}
	i = s.skip(i + 1)
	if i < len(d) && d[i] == '}' {
		o.Close = i
		return o, nil
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return Object{}, errShape
		}
		end, err := s.value(i)
		if err != nil {
			return Object{}, err
		}
		var name string
		if err := json.Unmarshal(d[i:end], &name); err != nil {
			return Object{}, err
		}
		m := Member{Name: name, Key: i}
		i = s.skip(end)
		if i >= len(d) || d[i] != ':' {
			return Object{}, errShape
		}
		m.Value = s.skip(i + 1)
		if m.End, err = s.value(m.Value); err != nil {
			return Object{}, err
		}
		if m.End == m.Value {
			return Object{}, errShape // no value
		}
		o.Members = append(o.Members, m)
		i = s.skip(m.End)
		if i < len(d) && d[i] == ',' {
			i = s.skip(i + 1)
			continue
		}
		if i < len(d) && d[i] == '}' {
			o.Close = i
			return o, nil
		}
		return Object{}, errShape
	}
}

// value returns one past the end of the JSON value at i.
func (s scanner) value(i int) (int, error) {
	d := s.data
	depth := 0
	for ; i < len(d); i++ {
		switch c := d[i]; c {
		case '"':
			for i++; i < len(d) && d[i] != '"'; i++ {
				if d[i] == '\\' {
					i++
				}
			}
			if i >= len(d) {
				return 0, errors.New("unterminated string")
			}
			if depth == 0 {
				return i + 1, nil
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 { // the end of a literal: the brace is the container's
				return i, nil
			}
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		default:
			if depth == 0 && strings.IndexByte(" \t\r\n,}]:", c) >= 0 {
				return i, nil
			}
		}
	}
	if depth != 0 {
		return 0, errors.New("unexpected end of the document")
	}
	return i, nil
}

// Remove returns doc without o's member i: from the end of the member before
// it (its comma goes too), or, for the first, up to the next one's key.
func (o Object) Remove(doc []byte, i int) []byte {
	ms := o.Members
	switch {
	case i > 0:
		return Splice(doc, ms[i-1].End, ms[i].End, nil)
	case len(ms) > 1:
		return Splice(doc, ms[0].Key, ms[1].Key, nil)
	}
	return Splice(doc, o.Open+1, o.Close, nil)
}

// InsertFirst adds body as o's first member, on a line of its own at
// indentation ind: it never meets a trailing comma (JSONC) after the last.
func (o Object) InsertFirst(doc []byte, ind string, body []byte) []byte {
	if len(o.Members) == 0 {
		return o.Insert(doc, ind, body)
	}
	return Splice(doc, o.Open+1, o.Open+1, append(append([]byte("\n"+ind), body...), ','))
}

// RemoveMember is Remove for a file a person edits (JSONC included): plain
// is doc with comments blanked (the same offsets; doc itself for plain
// JSON). The member's own lines go, with its comma; a comment on the line
// of the member before it stays there; and the result has no comma the
// input did not (strict JSON stays strict).
func (o Object) RemoveMember(doc, plain []byte, i int) []byte {
	ms := o.Members
	m := ms[i]
	start := m.Key
	if ls := lineStartBefore(doc, m.Key); ls >= 0 {
		start = ls
	}
	if c := commaAfter(doc, plain, m.End); c >= 0 {
		end := c + 1
		if nl := blankToEOL(doc, end); nl >= 0 {
			end = nl + 1
		}
		if start != m.Key && start > 0 && end == c+1 {
			start = m.Key
		}
		return Splice(doc, start, end, nil)
	}
	if i == 0 {
		return Splice(doc, o.Open+1, o.Close, nil)
	}
	// The last member, without a comma: its lines go from the end of the
	// line before it, and the comma of the member before it goes too.
	if start != m.Key {
		start-- // the newline that ends the line before
	}
	out := Splice(doc, start, m.End, nil)
	if c := commaAfter(doc, plain, ms[i-1].End); c >= 0 && c < start {
		out = Splice(out, c, c+1, nil)
	}
	return out
}

// lineStartBefore is the start of at's line when only spaces precede at on
// it, else -1.
func lineStartBefore(doc []byte, at int) int {
	ls := bytes.LastIndexByte(doc[:at], '\n') + 1
	if len(bytes.TrimLeft(doc[ls:at], " \t")) == 0 {
		return ls
	}
	return -1
}

// blankToEOL is the offset of the newline ending from's line when only
// spaces lie between, else -1.
func blankToEOL(doc []byte, from int) int {
	for i := from; i < len(doc); i++ {
		switch doc[i] {
		case ' ', '\t', '\r':
		case '\n':
			return i
		default:
			return -1
		}
	}
	return -1
}

// commaAfter is the offset of the comma that follows a value ending at pos,
// or -1: looked for in doc (a JSONC trailing comma is blanked in plain),
// then past comments in plain.
func commaAfter(doc, plain []byte, pos int) int {
	s := scanner{data: doc}
	if j := s.skip(pos); j < len(doc) && doc[j] == ',' {
		return j
	}
	p := scanner{data: plain}
	if k := p.skip(pos); k < len(plain) && plain[k] == ',' {
		return k
	}
	return -1
}
