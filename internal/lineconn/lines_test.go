package lineconn

import (
	"bufio"
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
)

// A line longer than the reader's buffer comes back as the buffer's pieces,
// each a copy (the reader's buffer is reused), never gathered into one.
func TestReadLineInPieces(t *testing.T) {
	line := strings.Repeat("0123456789", 20_000) // 200,000 bytes
	r := bufio.NewReaderSize(strings.NewReader(line+"\nnext\n"), 64<<10)
	parts, n, tooLong, err := ReadLine(r, 0)
	if err != nil || tooLong || n != len(line)+1 {
		t.Fatalf("n %d, tooLong %v, err %v", n, tooLong, err)
	}
	if len(parts) != 4 || len(parts[0]) != 64<<10 || string(bytes.Join(parts, nil)) != line+"\n" {
		t.Fatalf("%d parts (first %d bytes), want 4 of the buffer's size but the last, and the line", len(parts), len(parts[0]))
	}
	if next, _, _, err := ReadLine(r, 0); err != nil || string(Join(next)) != "next\n" {
		t.Fatalf("next line: %q, %v", Join(next), err)
	}
	if string(bytes.Join(parts, nil)) != line+"\n" {
		t.Fatal("reading the next line changed the pieces of the first: they are the reader's buffer, not copies")
	}
	if parts, n, _, err := ReadLine(r, 0); err != io.EOF || parts != nil || n != 0 {
		t.Fatalf("at the end: %q, %d, %v", parts, n, err)
	}
}

// The limit counts the line without its "\n" or "\r\n", also when the end
// is cut between two of the buffer's pieces.
func TestReadLineLimit(t *testing.T) {
	const size = 16 // the smallest bufio buffer
	for _, c := range []struct {
		input   string
		limit   int
		tooLong bool
	}{
		{strings.Repeat("a", 20) + "\n", 20, false},
		{strings.Repeat("a", 21) + "\n", 20, true},
		{strings.Repeat("a", 15) + "\r\n", 15, false}, // "\r" ends the first piece
		{strings.Repeat("a", 31) + "\r\n", 31, false}, // "\r" ends the second piece
		{strings.Repeat("a", 32) + "\r\n", 31, true},
		{strings.Repeat("a", 20) + "\r", 20, false}, // at the end of the input
		{strings.Repeat("a", 100), 99, true},
	} {
		r := bufio.NewReaderSize(strings.NewReader(c.input), size)
		parts, n, tooLong, _ := ReadLine(r, c.limit)
		if tooLong != c.tooLong || n != len(c.input) {
			t.Errorf("%q, limit %d: tooLong %v, n %d; want %v, %d", c.input, c.limit, tooLong, n, c.tooLong, len(c.input))
		}
		if got := string(Join(parts)); !tooLong && got != c.input || tooLong && parts != nil {
			t.Errorf("%q, limit %d: parts %q", c.input, c.limit, got)
		}
	}
}

// White space is trimmed across pieces: pieces that hold only white space
// go, and the rest keep their bytes.
func TestTrimSpace(t *testing.T) {
	for _, c := range []struct {
		parts []string
		want  []string
	}{
		{[]string{"  ", "\t {", "x", "} \r", "\n"}, []string{"{", "x", "}"}},
		{[]string{" \n", "\t"}, nil},
		{[]string{"{}"}, []string{"{}"}},
		{[]string{"\u00a0{}\u2028"}, []string{"{}"}}, // Unicode white space, as bytes.TrimSpace
	} {
		var parts [][]byte
		for _, p := range c.parts {
			parts = append(parts, []byte(p))
		}
		var got []string
		for _, p := range TrimSpace(parts) {
			got = append(got, string(p))
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("TrimSpace(%q) = %q, want %q", c.parts, got, c.want)
		}
	}
}

// cutAt is b cut at the offsets cuts names (each byte a step forward from
// the last cut, 0 making an empty part).
func cutAt(b, cuts []byte) [][]byte {
	var parts [][]byte
	for _, c := range cuts {
		n := min(int(c), len(b))
		parts, b = append(parts, b[:n]), b[n:]
	}
	return append(parts, b)
}

// TrimSpace of a line's pieces is bytes.TrimSpace of the line, wherever the
// pieces are cut: also through a multi-byte white space character (U+00A0,
// U+2028), which a line of 64 KiB or more may have cut by the reader's
// buffer after its message.
func FuzzTrimSpace(f *testing.F) {
	for _, s := range []string{
		"{\"a\":1}\u00a0\n",
		" \u2028\t{}\u0085 \r\n",
		"\u00a0\u00a0x\u3000",
		"\xc2 {} \xe2\x80",
	} {
		f.Add([]byte(s), []byte{1, 0, 2, 1, 1})
		f.Add([]byte(s), []byte{8, 1})
		f.Add([]byte(s), []byte{2, 1, 1, 1, 1, 1, 1, 1})
	}
	f.Fuzz(func(t *testing.T, line, cuts []byte) {
		parts := cutAt(bytes.Clone(line), cuts)
		if got, want := bytes.Join(TrimSpace(parts), nil), bytes.TrimSpace(line); !bytes.Equal(got, want) {
			t.Fatalf("TrimSpace(%q) = %q, want %q", cutAt(line, cuts), got, want)
		}
	})
}

// CutPrefix finds a prefix cut between parts, empty ones too.
func TestCutPrefix(t *testing.T) {
	bom := []byte("\xef\xbb\xbf")
	for _, c := range []struct {
		parts []string
		rest  string
		ok    bool
	}{
		{[]string{"\xef\xbb\xbf{}"}, "{}", true},
		{[]string{"\xef", "", "\xbb", "\xbf{", "}"}, "{}", true},
		{[]string{"\xef\xbb", "\xbf"}, "", true},
		{[]string{"\xef\xbb"}, "\xef\xbb", false},
		{[]string{"\xef", "x\xbf"}, "\xefx\xbf", false},
		{nil, "", false},
	} {
		var parts [][]byte
		for _, p := range c.parts {
			parts = append(parts, []byte(p))
		}
		rest, ok := CutPrefix(parts, bom)
		if got := string(bytes.Join(rest, nil)); got != c.rest || ok != c.ok {
			t.Errorf("CutPrefix(%q) = %q, %v; want %q, %v", c.parts, got, ok, c.rest, c.ok)
		}
	}
}
