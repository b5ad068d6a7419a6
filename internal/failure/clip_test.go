package failure

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTo(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "abc…"},
		{"ééé", 3, "é…"}, // never half a character
	} {
		if got := Clip(tc.s, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	if got := ClipName(strings.Repeat("é", 1<<20)); len(got) > ClipNameBytes+3 || !utf8.ValidString(got) {
		t.Errorf("ClipName kept %d bytes", len(got))
	}
}

func TestLastLines(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n, b int
		want string
	}{
		{"a\nb\nc\n", 2, 100, "b\nc"},
		{"a\nb\nc", 5, 100, "a\nb\nc"},
		{"one line", 3, 100, "one line"},
		{"x\n" + strings.Repeat("é", 100), 1, 11, "…ééééé"},
	} {
		if got := LastLines(tc.s, tc.n, tc.b); got != tc.want {
			t.Errorf("LastLines(%q, %d, %d) = %q, want %q", tc.s, tc.n, tc.b, got, tc.want)
		}
	}
}
