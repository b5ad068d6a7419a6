package clip

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
		if got := To(tc.s, tc.n); got != tc.want {
			t.Errorf("To(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	if got := Name(strings.Repeat("é", 1<<20)); len(got) > NameBytes+3 || !utf8.ValidString(got) {
		t.Errorf("Name kept %d bytes", len(got))
	}
}
