package lineconn

import (
	"bufio"
	"bytes"
	"errors"
	"unicode"
	"unicode/utf8"
)

// ReadLine reads up to and with the next newline, and returns the line as
// the pieces the reader's buffer gave: each a copy at its own size. A line
// of megabytes is thus held once, in pieces of the buffer's size, and never
// gathered into one slice: internal/bulk lifts its large strings from the
// pieces (bulk.Table.LiftParts), and what is left is small. (Gathering it
// cost a second copy of the line, live at once with the first.)
//
// n is the bytes read. With limit > 0, a line longer than limit bytes
// (its "\n" or "\r\n" not counted) is read to its end but not kept: parts
// is nil and tooLong is set. err is the read error after the line (io.EOF
// at the end of the input).
func ReadLine(r *bufio.Reader, limit int) (parts [][]byte, n int, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		n += len(chunk)
		if !tooLong {
			// -2: room for a "\r\n", judged below (and no overflow for a
			// limit near MaxInt).
			if limit > 0 && n-2 > limit {
				tooLong, parts = true, nil
			} else if len(chunk) > 0 {
				parts = append(parts, bytes.Clone(chunk))
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if !tooLong && limit > 0 && n-newlineLen(parts) > limit {
			tooLong, parts = true, nil
		}
		return parts, n, tooLong, err
	}
}

// newlineLen is the length of the "\n", "\r\n" or "\r" that ends parts
// (0 for none), which may be cut between two parts.
func newlineLen(parts [][]byte) int {
	end, want := 0, byte('\n')
	for k := len(parts) - 1; k >= 0; k-- {
		p := parts[k]
		for i := len(p) - 1; i >= 0; i-- {
			if want == '\n' {
				want = '\r'
				if p[i] == '\n' {
					end++
					continue
				}
			}
			if p[i] == '\r' {
				end++
			}
			return end
		}
	}
	return end
}

// TrimSpace is parts without the white space before and after their bytes,
// as bytes.TrimSpace would trim them joined: a multi-byte Unicode space
// (U+00A0, U+2028…) cut between two parts is read across the cut, so that
// where the reader's buffer happened to cut a line changes nothing.
func TrimSpace(parts [][]byte) [][]byte {
	for len(parts) > 0 {
		p := bytes.TrimLeftFunc(parts[0], unicode.IsSpace)
		if len(p) == 0 {
			parts = parts[1:]
			continue
		}
		parts[0] = p
		if utf8.FullRune(p) || len(parts) == 1 {
			break
		}
		// p begins with a character its part's end cuts.
		var head [utf8.UTFMax]byte
		r, size := utf8.DecodeRune(gather(head[:0], parts))
		if !unicode.IsSpace(r) {
			break
		}
		parts = dropFront(parts, size)
	}
	for len(parts) > 0 {
		last := len(parts) - 1
		p := bytes.TrimRightFunc(parts[last], unicode.IsSpace)
		if len(p) == 0 {
			parts = parts[:last]
			continue
		}
		parts[last] = p
		if last == 0 {
			break
		}
		// The last character may begin in an earlier part.
		var tail [utf8.UTFMax]byte
		r, size := utf8.DecodeLastRune(gatherLast(tail[:0], parts))
		if size <= len(p) || !unicode.IsSpace(r) {
			break // a character of p, not white space (or it would be gone)
		}
		parts = dropBack(parts, size)
	}
	return parts
}

// gather appends to dst (of capacity utf8.UTFMax) the first bytes of parts,
// up to its capacity.
func gather(dst []byte, parts [][]byte) []byte {
	for _, p := range parts {
		dst = append(dst, p[:min(len(p), cap(dst)-len(dst))]...)
		if len(dst) == cap(dst) {
			break
		}
	}
	return dst
}

// gatherLast is the last bytes of parts, up to dst's capacity (utf8.UTFMax),
// in dst.
func gatherLast(dst []byte, parts [][]byte) []byte {
	n := 0
	for k := len(parts) - 1; k >= 0 && n < cap(dst); k-- {
		n += min(len(parts[k]), cap(dst)-n)
	}
	dst = dst[:n]
	for k := len(parts) - 1; k >= 0 && n > 0; k-- {
		p := parts[k]
		c := min(len(p), n)
		n -= c
		copy(dst[n:], p[len(p)-c:])
	}
	return dst
}

// dropFront is parts without their first n bytes.
func dropFront(parts [][]byte, n int) [][]byte {
	for n > 0 && len(parts) > 0 {
		c := min(n, len(parts[0]))
		if parts[0] = parts[0][c:]; len(parts[0]) == 0 {
			parts = parts[1:]
		}
		n -= c
	}
	return parts
}

// dropBack is parts without their last n bytes.
func dropBack(parts [][]byte, n int) [][]byte {
	for n > 0 && len(parts) > 0 {
		last := len(parts) - 1
		c := min(n, len(parts[last]))
		if parts[last] = parts[last][:len(parts[last])-c]; len(parts[last]) == 0 {
			parts = parts[:last]
		}
		n -= c
	}
	return parts
}

// CutPrefix is parts without prefix before their bytes, and true; or parts
// and false when they do not begin with it. prefix may be cut between parts.
func CutPrefix(parts [][]byte, prefix []byte) ([][]byte, bool) {
	rest := prefix
	for _, p := range parts {
		if len(rest) == 0 {
			break
		}
		c := min(len(p), len(rest))
		if !bytes.Equal(p[:c], rest[:c]) {
			return parts, false
		}
		rest = rest[c:]
	}
	if len(rest) > 0 {
		return parts, false
	}
	return dropFront(parts, len(prefix)), true
}

// Join is parts as one slice: the one part itself when there is one.
func Join(parts [][]byte) []byte {
	if len(parts) == 1 {
		return parts[0]
	}
	return bytes.Join(parts, nil)
}

// Len is the total length of parts.
func Len(parts [][]byte) int {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n
}
