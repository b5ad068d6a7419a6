package httpserve

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
)

// Whatever length a body claims (unknown, negative, none, short, long,
// the largest), and however its reader hands out bytes (past its claimed
// length too), readBody returns the body's first limit+1 bytes, in pieces
// of at most 64 KiB, and no more pieces than the bytes need plus two (a
// claimed length never makes a run of tiny pieces).
func FuzzReadBodyClaimedLength(f *testing.F) {
	for _, c := range []struct {
		size          int
		length, limit int64
		how           uint8
	}{
		{100_000, -1, 1 << 20, 0},
		{100_000, -2, 1 << 20, 1},
		{100_000, math.MinInt64, 1 << 20, 2},
		{100_000, math.MaxInt64, math.MaxInt64, 0},
		{100_000, 0, 1 << 20, 1},
		{100_000, 1, 1 << 20, 3},
		{100_000, 65_535, 1 << 20, 0},
		{100_000, 65_536, 1 << 20, 2},
		{100_000, 65_537, 70_000, 0},
		{131_072, 131_072, 131_072, 0},
		{0, 0, 0, 0},
		{10, 10, 9, 1},
	} {
		f.Add(c.size, c.length, c.limit, c.how)
	}
	f.Fuzz(func(t *testing.T, size int, length, limit int64, how uint8) {
		if size < 0 || size > 300_000 || limit < 0 {
			return
		}
		body := strings.Repeat("0123456789abcdef", size/16+1)[:size]
		var r io.Reader = strings.NewReader(body)
		switch how % 4 {
		case 1:
			r = iotest.OneByteReader(r)
		case 2:
			r = iotest.HalfReader(r)
		case 3:
			r = iotest.DataErrReader(r)
		}
		parts, n, err := readBody(r, length, limit)
		want := body
		if limit < int64(len(body)) {
			want = body[:limit+1]
		}
		if got := bytes.Join(parts, nil); err != nil || n != int64(len(want)) || string(got) != want {
			t.Fatalf("size %d, length %d, limit %d: %d bytes (n %d), %v; want %d", size, length, limit, len(got), n, err, len(want))
		}
		for k, p := range parts {
			if len(p) == 0 || len(p) > bodyPiece {
				t.Fatalf("size %d, length %d, limit %d: piece %d holds %d bytes", size, length, limit, k, len(p))
			}
		}
		if most := (len(want)+bodyPiece-1)/bodyPiece + 2; len(parts) > most {
			t.Fatalf("size %d, length %d, limit %d: %d pieces for %d bytes", size, length, limit, len(parts), len(want))
		}
	})
}
