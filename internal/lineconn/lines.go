package lineconn

import (
	"bufio"
	"bytes"
	"errors"
	"unicode"
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

// TrimSpace is parts without the white space before and after their bytes
// (as bytes.TrimSpace would trim them joined, but for a multi-byte Unicode
// space cut between two parts, which is kept: a line that begins with a
// buffer's worth of white space is not a message anyway).
func TrimSpace(parts [][]byte) [][]byte {
	for len(parts) > 0 {
		if p := bytes.TrimLeftFunc(parts[0], unicode.IsSpace); len(p) > 0 {
			parts[0] = p
			break
		}
		parts = parts[1:]
	}
	for len(parts) > 0 {
		if p := bytes.TrimRightFunc(parts[len(parts)-1], unicode.IsSpace); len(p) > 0 {
			parts[len(parts)-1] = p
			break
		}
		parts = parts[:len(parts)-1]
	}
	return parts
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
