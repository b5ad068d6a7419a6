// Package suggest finds the word a user most likely meant: the "did you
// mean" of a mistyped command, flag, server, tool or registry key.
//
//	suggest.Closest("sevrers", []string{"serve", "servers", "check"}) // "servers"
//	suggest.Closest("zzz", []string{"serve"})                         // "" (nothing close)
package suggest

import (
	"strings"
	"unicode/utf8"
)

// MaxWord is the longest word, in characters, that Closest suggests for:
// a longer one is no typo worth a guess, and the edit distance costs the
// product of the two lengths, so that a caller's megabyte of tool name, or a
// hosted server's 10,000-character tool names, would cost gigabytes and
// seconds. (MCP tool names are at most 128 characters.)
const MaxWord = 128

// Closest returns the candidate nearest to word, or "" when none is near
// enough to be worth suggesting. Near means an edit distance (insertions,
// deletions, substitutions and swaps of neighbours, ignoring case) of at most
// a third of the word's length, and never less than 1 or more than 3: a
// suggestion that is a guess misleads more than it helps. A word longer
// than MaxWord gets no suggestion.
func Closest(word string, candidates []string) string {
	n := utf8.RuneCountInString(word)
	if n > MaxWord {
		return ""
	}
	w := strings.ToLower(word)
	limit := min(max(n/3, 1), 3)
	best, bestDist := "", limit+1
	for _, c := range candidates {
		// The distance is at least the difference of the lengths: a
		// candidate that differs by more is not near (nor compared).
		if m := utf8.RuneCountInString(c); m > n+limit || m < n-limit {
			continue
		}
		d := distance(w, strings.ToLower(c))
		// On a tie, a candidate the word begins ("server" → "servers")
		// is the likelier intent.
		if d < bestDist || d == bestDist && best != "" && !strings.HasPrefix(strings.ToLower(best), w) && strings.HasPrefix(strings.ToLower(c), w) {
			best, bestDist = c, d
		}
	}
	return best
}

// distance is the optimal string alignment distance between a and b: the
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
