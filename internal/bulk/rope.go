package bulk

import (
	"bytes"
	"sort"
	"unicode/utf8"
)

// rope is a message held as the parts it was read in (a line read through
// a 64 KiB buffer arrives as 64 KiB pieces), addressed by offsets into
// their concatenation. Lifting from the parts as they are, rather than from
// one gathered copy, is what keeps a message of megabytes to one copy in
// memory: a lifted literal is kept as sub-slices of the parts.
type rope struct {
	parts  [][]byte
	starts []int // starts[k] is the offset of parts[k]; starts[len(parts)] is the length
	k      int   // the part at last used: scans move forward, a byte or a search at a time
}

func newRope(parts [][]byte) *rope {
	r := &rope{parts: parts, starts: make([]int, len(parts)+1)}
	for k, p := range parts {
		r.starts[k+1] = r.starts[k] + len(p)
	}
	return r
}

func (r *rope) len() int { return r.starts[len(r.parts)] }

// part is the index of the part holding offset i (0 <= i < r.len()).
func (r *rope) part(i int) int {
	if k := r.k; r.starts[k] <= i && i < r.starts[k+1] {
		return k
	}
	if k := r.k + 1; k < len(r.parts) && r.starts[k] <= i && i < r.starts[k+1] {
		r.k = k
		return k
	}
	// The last start not after i, skipping empty parts.
	r.k = sort.Search(len(r.parts), func(k int) bool { return r.starts[k+1] > i })
	return r.k
}

// at is the byte at offset i.
func (r *rope) at(i int) byte {
	k := r.part(i)
	return r.parts[k][i-r.starts[k]]
}

// index is the offset of the first c at or after from and before to, or -1.
func (r *rope) index(from, to int, c byte) int {
	for from < to {
		k := r.part(from)
		p := r.parts[k][from-r.starts[k] : min(len(r.parts[k]), to-r.starts[k])]
		if j := bytes.IndexByte(p, c); j >= 0 {
			return from + j
		}
		from += len(p)
	}
	return -1
}

// pieces is the bytes from a to b as sub-slices of the parts, each capped
// at its length (so that appending to one never writes over its part).
func (r *rope) pieces(a, b int) [][]byte {
	var out [][]byte
	for a < b {
		k := r.part(a)
		s, e := a-r.starts[k], min(len(r.parts[k]), b-r.starts[k])
		out = append(out, r.parts[k][s:e:e])
		a += e - s
	}
	return out
}

// appendRange appends the bytes from a to b to dst.
func (r *rope) appendRange(dst []byte, a, b int) []byte {
	for a < b {
		k := r.part(a)
		s, e := a-r.starts[k], min(len(r.parts[k]), b-r.starts[k])
		dst = append(dst, r.parts[k][s:e]...)
		a += e - s
	}
	return dst
}

// equal reports whether the bytes from a to b are s.
func (r *rope) equal(a, b int, s string) bool {
	if b-a != len(s) {
		return false
	}
	for i := range len(s) {
		if r.at(a+i) != s[i] {
			return false
		}
	}
	return true
}

// maxKey is the longest key scan keeps to compare: the keys it looks for
// are short, and copying a long key that spans parts would cost its size.
const maxKey = 64

// overlong stands for a key longer than maxKey: no key scan looks for is
// "\x00" (a control character cannot be written raw in a JSON string).
var overlong = []byte{0}

// key is the key from a to b, for picked: a sub-slice when it lies in one
// part, else a copy (overlong past maxKey).
func (r *rope) key(a, b int) []byte {
	if a == b {
		return []byte{}
	}
	if k := r.part(a); b <= r.starts[k+1] {
		return r.parts[k][a-r.starts[k] : b-r.starts[k]]
	}
	if b-a > maxKey {
		return overlong
	}
	return r.appendRange(nil, a, b)
}

// stringEnd is the offset of the quote that closes the string literal
// opening at offset open, or -1. A quote is escaped when an odd number of
// backslashes stands before it. Each backslash is counted at most once over
// the whole literal (a run ends at the previous quote), so this is linear,
// and bytes.IndexByte makes a long literal fast.
func (r *rope) stringEnd(open int) int {
	n := r.len()
	for j := open + 1; ; {
		q := r.index(j, n, '"')
		if q < 0 {
			return -1
		}
		slashes := 0
		for p := q - 1; p > open && r.at(p) == '\\'; p-- {
			slashes++
		}
		if slashes%2 == 0 {
			return q
		}
		j = q + 1
	}
}

// clean reports whether the contents of a literal (from a to b, quotes
// excluded) are a valid JSON string that decodes to exactly what it says:
// valid UTF-8 (encoding/json turns invalid bytes into U+FFFD), no control
// character, only JSON's escapes, and no escaped surrogate but in a pair,
// high then low (a lone one decodes to U+FFFD too). A literal that is not a valid JSON string is never
// lifted, so that the lifted message is valid JSON exactly when msg is.
func (r *rope) clean(a, b int) bool {
	// UTF-8 and control characters, a part at a time; a character cut by
	// a part's end is carried over to the next.
	var carry [utf8.UTFMax]byte
	nc := 0
	for _, p := range r.pieces(a, b) {
		for nc > 0 && len(p) > 0 {
			carry[nc], p = p[0], p[1:]
			nc++
			if utf8.FullRune(carry[:nc]) {
				if !utf8.Valid(carry[:nc]) {
					return false
				}
				nc = 0
			}
		}
		if len(p) == 0 {
			continue
		}
		cut := len(p)
		for i := len(p) - 1; i >= 0 && i > len(p)-utf8.UTFMax; i-- {
			if utf8.RuneStart(p[i]) {
				if !utf8.FullRune(p[i:]) {
					cut = i
				}
				break
			}
		}
		if !utf8.Valid(p[:cut]) {
			return false
		}
		nc = copy(carry[:], p[cut:])
		for _, c := range p {
			if c < 0x20 {
				return false
			}
		}
	}
	if nc > 0 {
		return false // a cut character at the end
	}
	// Escapes.
	for i := a; ; {
		k := r.index(i, b, '\\')
		if k < 0 {
			return true
		}
		if k+1 >= b {
			return false // not valid JSON
		}
		switch r.at(k + 1) {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i = k + 2
			continue
		case 'u':
		default:
			return false // not valid JSON
		}
		if k+6 > b {
			return false // not valid JSON
		}
		var h [4]byte
		r.appendRange(h[:0], k+2, k+6)
		if !isHex4(h[:]) {
			return false // not valid JSON
		}
		i = k + 6
		switch surrogate(h[:]) {
		case 'l':
			return false // alone
		case 'h':
			// Clean only as a pair: "\uD83D\uDE00" is 😀.
			if i+6 > b || r.at(i) != '\\' || r.at(i+1) != 'u' {
				return false
			}
			r.appendRange(h[:0], i+2, i+6)
			if !isHex4(h[:]) || surrogate(h[:]) != 'l' {
				return false
			}
			i += 6
		}
	}
}
