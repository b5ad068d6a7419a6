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
