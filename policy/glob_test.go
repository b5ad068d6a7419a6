package policy

import (
	"path"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		// What path.Match would refuse to cross: a tool's name is no path.
		{"*", "admin/delete_user", true},
		{"*delete*", "repo/delete", true},
		{"a?b", "a/b", true},
		{"fs/*", "fs/a/b", true},
		{"get_*", "get_x/delete", true},
		// path.Match's syntax, as it reads it.
		{"", "", true},
		{"", "x", false},
		{"*", "", true},
		{"get_*", "get_file", true},
		{"get_*", "put_file", false},
		{"rm[a-z]", "rmx", true},
		{"rm[a-z]", "rm1", false},
		{"rm[^a-z]", "rm1", true},
		{"rm[^a-z]", "rmx", false},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{`[\]]`, "]", true},
		{`[\-]`, "-", true},
		{"a[/]b", "a/b", true},
		{"?", "ä", true},
		{"??", "ä", false},
		{"*a*b*c", "xaybzc", true},
		{"*a*b*c", "xaybzcd", false},
		{"*.*", "a.b.c", true},
		// Case is ignored, in the name and in the pattern.
		{"*delete*", "Delete_User", true},
		{"*delete*", "DELETE", true},
		{"GET_*", "get_file", true},
		{"get_*", "Put_File", false},
	} {
		got, err := Match(tc.pattern, tc.name)
		if err != nil || got != tc.want {
			t.Errorf("Match(%q, %q) = %v, %v; want %v", tc.pattern, tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{"[", `\`, `a\`, "[]", "[^]", "[a-]", "*[", "[-a]", "[a"} {
		if _, err := Match(bad, "a"); err != path.ErrBadPattern {
			t.Errorf("Match(%q): err %v, want path.ErrBadPattern", bad, err)
		}
	}
}

// FuzzMatch holds Match to path.Match (of ASCII-folded pattern and name):
// the same errors, the same answers on
// names without a /, and on names with one, never less than path.Match
// matches (Match only lets * and ? cross a /).
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"*delete*", "fs/delete"}, {"a?b", "a/b"}, {"[a-c]*x", "bx"}, {`\[*`, "[x"}, {"[^]a]", "b"},
		{"*a*a*a*b", "aaaaaaaaab"}, {"ä?", "äx"}, {"*\xa4", "ä"}, {"[\\-a]", "-"}, {"[", "x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		_, werr := path.Match(pattern, name)
		want, _ := path.Match(FoldASCII(pattern), FoldASCII(name)) // case is ignored
		got, gerr := Match(pattern, name)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("Match(%q, %q): err %v, path.Match: %v", pattern, name, gerr, werr)
		}
		switch {
		case werr != nil:
		case !strings.Contains(name, "/") && got != want:
			t.Fatalf("Match(%q, %q) = %v, path.Match says %v", pattern, name, got, want)
		case want && !got:
			t.Fatalf("Match(%q, %q) = false, path.Match says true", pattern, name)
		}
	})
}
