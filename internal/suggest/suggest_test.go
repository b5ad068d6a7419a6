package suggest

import (
	"math/rand"
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

// distance is, computed whole, the optimal string alignment distance between a and b: the
// Levenshtein distance, with a swap of two neighbouring letters counted as
// one edit (the commonest typo: "sevrers").
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// within agrees with the whole computation wherever it answers: the
// distance when it is at most limit, limit+1 when it is more.
func TestWithinIsTheDistance(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	word := func() string {
		b := make([]rune, r.Intn(9))
		for i := range b {
			b[i] = rune("abcé"[r.Intn(3)])
		}
		return string(b)
	}
	var rows distRows
	for range 20000 {
		a, b := word(), word()
		for limit := 1; limit <= 3; limit++ {
			want := min(distance(a, b), limit+1)
			if got := rows.within([]rune(a), []rune(b), limit); got != want {
				t.Fatalf("within(%q, %q, %d) = %d, want %d", a, b, limit, got, want)
			}
		}
	}
}

// A did-you-mean among a hosted server's huge list (20,000 names of
// MaxWord characters: its tools/list is bounded only by bytes) allocates
// next to nothing, where the whole computation allocated 2.6 GB for it
// (and took seconds; 120,000 names took 18 s).
func TestClosestAmongManyLongNames(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	long := func() string {
		b := make([]byte, MaxWord)
		for i := range b {
			b[i] = byte('a' + r.Intn(26))
		}
		return string(b)
	}
	names := make([]string, 20000)
	for i := range names {
		names[i] = long()
	}
	word := []byte(names[12345])
	word[7], word[8] = word[8], word[7] // a swap: one edit
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := Closest(string(word), names)
	runtime.ReadMemStats(&after)
	if got != names[12345] {
		t.Errorf("Closest found %.20q, want %.20q", got, names[12345])
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Errorf("%d bytes allocated for one did-you-mean", n)
	}
}
