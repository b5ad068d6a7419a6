package suggest

import (
	"runtime"
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	commands := []string{"serve", "servers", "list-tools", "call", "check", "describe", "help", "completion"}
	for _, tc := range []struct {
		word       string
		candidates []string
		want       string
	}{
		{"sevrers", commands, "servers"},
		{"server", commands, "servers"},
		{"lsit-tools", commands, "list-tools"},
		{"chek", commands, "check"},
		{"CALL", commands, "call"},
		{"describ", commands, "describe"},
		{"zzz", commands, ""},
		{"install", commands, ""},
		{"argz", []string{"command", "args", "env", "cwd"}, "args"},
		{"ecko", []string{"echo", "add", "fail"}, "echo"},
		{"everythin", []string{"everything", "demo"}, "everything"},
		{"x", nil, ""},
	} {
		if got := Closest(tc.word, tc.candidates); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

// A long word, or long candidates, cost no more than short ones: the edit
// distance is computed only between words of at most MaxWord characters and
// about the same length. (A megabyte of word against two short names used
// to allocate some 200 MB; two 10,000-character names took seconds.)
func TestClosestIsBounded(t *testing.T) {
	word := strings.Repeat("w", MaxWord)
	for _, tc := range []struct {
		name       string
		word       string
		candidates []string
		want       string
	}{
		{"a megabyte of word", strings.Repeat("a", 1<<20), []string{"servers", "list_tools"}, ""},
		{"a long word against its near twin", strings.Repeat("a", 2000), []string{strings.Repeat("a", 2000) + "b"}, ""},
		{"a word against long candidates", word, []string{strings.Repeat("w", 100_000), strings.Repeat("x", 100_000)}, ""},
		{"a short word among long names", "ecko", []string{strings.Repeat("e", 100_000), "echo"}, "echo"},
		{"at MaxWord", word[1:] + "c", []string{word}, word},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := Closest(tc.word, tc.candidates)
		runtime.ReadMemStats(&after)
		if got != tc.want {
			t.Errorf("%s: Closest = %.20q, want %.20q", tc.name, got, tc.want)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("%s: %d bytes allocated", tc.name, n)
		}
	}
}

// The banded, early-stopping table gives the full table's answer: checked
// against a plain (n+1)×(m+1) table on many pairs of short words.
func TestWithinMatchesFullTable(t *testing.T) {
	full := func(a, b []rune) int {
		d := make([][]int, len(a)+1)
		for i := range d {
			d[i] = make([]int, len(b)+1)
			d[i][0] = i
		}
		for j := range d[0] {
			d[0][j] = j
		}
		for i := 1; i <= len(a); i++ {
			for j := 1; j <= len(b); j++ {
				cost := 1
				if a[i-1] == b[j-1] {
					cost = 0
				}
				d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
				if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
					d[i][j] = min(d[i][j], d[i-2][j-2]+1)
				}
			}
		}
		return d[len(a)][len(b)]
	}
	words := []string{"", "a", "ab", "ba", "abc", "acb", "bca", "abcd", "abdc", "badc", "dcba", "aabb", "abab", "servers", "sevrers", "serve", "server", "list-tools", "lsit-tools", "check", "chek", "echo", "ecko"}
	var tb table
	for _, x := range words {
		for _, y := range words {
			a, b := []rune(x), []rune(y)
			want := full(a, b)
			for bound := 0; bound <= 4; bound++ {
				got, _ := tb.within(a, b, bound)
				if exp := min(want, bound+1); got != exp {
					t.Errorf("within(%q, %q, %d) = %d, want %d", x, y, bound, got, exp)
				}
			}
		}
	}
}
