package varref

import (
	"errors"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"A": true, "_x": true, "API_KEY2": true, "a1": true,
		"": false, "1A": false, "A-B": false, "A B": false, "é": false, "env:A": false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

// Each hands on the text and the references in order, $$ as $, and
// refuses what the registry refuses, at the byte where it stands.
func TestEach(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", "", ""},
		{"plain", "plain", ""},
		{"a${X}b", "a<X>b", ""},
		{"${X}${Y}", "<X><Y>", ""},
		{"$$X", "$X", ""},
		{"$${X}", "${X}", ""},
		{"x$$$$", "x$$", ""},
		{"${not-a-name}", "<not-a-name>", ""},
		{"${}", "<>", ""},
		{"ab${X", "ab", "unterminated ${ at byte 2 (write $$ for a literal $)"},
		{"a$X", "a", "a $ at byte 1 must start ${NAME} or be doubled as $$"},
		{"a$", "a", "a $ at byte 1 must start ${NAME} or be doubled as $$"},
		{"${X}$", "<X>", "a $ at byte 4 must start ${NAME} or be doubled as $$"},
	} {
		var b strings.Builder
		err := Each(tc.in, func(s string) { b.WriteString(s) }, func(name string) error {
			b.WriteString("<" + name + ">")
			return nil
		})
		if got := b.String(); got != tc.want || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("Each(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := Each("${A}${B}", func(string) {}, func(string) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("ref's error: %v after %d references, want it at the first", err, n)
	}
}
