// Package suggest finds the word a user most likely meant: the "did you
// mean" of a mistyped command, flag, server, tool or registry key.
//
//	suggest.Closest("sevrers", []string{"serve", "servers", "check"}) // "servers"
//	suggest.Closest("zzz", []string{"serve"})                         // "" (nothing close)
package suggest

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxWord is the longest word, in characters, that Closest suggests for:
// a longer one is no typo worth a guess, and the edit distance costs the
// product of the two lengths, so that a caller's megabyte of tool name, or a
// hosted server's 10,000-character tool names, would cost gigabytes and
// seconds. (MCP tool names are at most 128 characters.)
const MaxWord = 128

// MaxCandidates is how many candidates one Closest call looks at, and
// MaxCells how many cells of edit-distance table it fills in all: a hosted
// server chooses how many tools it lists and how long their names are
// (80,000 names of 128 characters once cost 25 s of CPU per mistyped call).
// Past either bound the best suggestion found so far stands. No ordinary
// list comes near: a registry's keys, a CLI's commands, a server's tools.
const (
	MaxCandidates = 10_000
	MaxCells      = 1 << 22
)

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
	w := lowerRunes(nil, word)
	limit := min(max(n/3, 1), 3)
	best, bestDist := "", limit+1
	var (
		t     table
		c     []rune
		cells int
	)
	for i, cand := range candidates {
		if i == MaxCandidates || cells > MaxCells {
			break
		}
		// The distance is at least the difference of the lengths: a
		// candidate that differs by more is not near (nor compared).
		if m := utf8.RuneCountInString(cand); m > n+limit || m < n-limit {
			continue
		}
		c = lowerRunes(c[:0], cand)
		// Only distances up to the best so far matter (a tie may still
		// win, below), so the table stops as soon as a row exceeds it.
		d, used := t.within(w, c, bestDist)
		cells += used
		// On a tie, a candidate the word begins ("server" → "servers")
		// is the likelier intent.
		if d < bestDist || d == bestDist && best != "" && !hasPrefixFold(best, w) && hasPrefixFold(cand, w) {
			best, bestDist = cand, d
		}
	}
	return best
}

func lowerRunes(dst []rune, s string) []rune {
	for _, r := range s {
		dst = append(dst, unicode.ToLower(r))
	}
	return dst
}

func hasPrefixFold(s string, prefix []rune) bool {
	return strings.HasPrefix(strings.ToLower(s), string(prefix))
}

// table holds the three rows of the optimal-string-alignment table that
// within needs (the row before the previous one, for swaps), reused from one
// candidate to the next.
type table struct{ rows [3][]int }

// within is the optimal string alignment distance between a and b (the
// Levenshtein distance, with a swap of two neighbouring letters counted as
// one edit, the commonest typo: "sevrers") when it is at most bound, and
// bound+1 otherwise; cells is how many cells it filled. Only the band of
// cells within bound of the diagonal is filled (a cell further off is at
// least its distance from the diagonal), and a row whose every cell exceeds
// bound ends the work: no later row can come back under it.
func (t *table) within(a, b []rune, bound int) (dist, cells int) {
	inf := bound + 1
	if len(a)-len(b) > bound || len(b)-len(a) > bound {
		return inf, 0
	}
	for k := range t.rows {
		if cap(t.rows[k]) < len(b)+1 {
			t.rows[k] = make([]int, len(b)+1)
		}
		t.rows[k] = t.rows[k][:len(b)+1]
	}
	prev2, prev, cur := t.rows[0], t.rows[1], t.rows[2]
	for j := range prev {
		prev[j] = min(j, inf)
	}
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-bound), min(len(b), i+bound)
		// The cells just outside the band are read (by this row and the
		// next two), and hold an older row's values: make them inf.
		cur[0] = min(i, inf)
		if lo > 1 {
			cur[lo-1] = inf
		}
		if hi < len(b) {
			cur[hi+1] = inf
		}
		rowMin := cur[0]
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, prev2[j-2]+1)
			}
			cur[j] = min(d, inf)
			rowMin = min(rowMin, cur[j])
		}
		cells += hi - lo + 1
		if rowMin > bound {
			return inf, cells
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)], cells
}
