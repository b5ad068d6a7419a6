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
	ra := []rune(w)
	var rb []rune
	var rows distRows
	for _, c := range candidates {
		// The distance is at least the difference of the lengths: a
		// candidate that differs by more is not near (nor compared).
		if m := utf8.RuneCountInString(c); m > n+limit || m < n-limit {
			continue
		}
		rb = lowerRunes(rb[:0], c)
		d := rows.within(ra, rb, limit)
		// On a tie, a candidate the word begins ("server" → "servers")
		// is the likelier intent.
		if d < bestDist || d == bestDist && best != "" && !strings.HasPrefix(strings.ToLower(best), w) && strings.HasPrefix(strings.ToLower(c), w) {
			best, bestDist = c, d
		}
	}
	return best
}

// lowerRunes appends s's runes, lower-cased, to buf.
func lowerRunes(buf []rune, s string) []rune {
	for _, r := range s {
		buf = append(buf, unicode.ToLower(r))
	}
	return buf
}

// distRows are the rows within computes with, kept from one candidate to
// the next: a list of a hundred thousand names allocates them once.
type distRows struct{ prev2, prev, cur []int }

// within is distance(a, b) when it is at most limit, and limit+1 when it
// is more. Only the cells within limit of the diagonal are computed, and
// it stops at the first row that is past limit: a did-you-mean among a
// hosted server's hundred thousand names of MaxWord characters costs
// (2·limit+1)·MaxWord cells a name at most, not MaxWord², and far fewer
// for names that differ early (it took 18 s, and 16 GB of allocations).
func (r *distRows) within(a, b []rune, limit int) int {
	n, m := len(a), len(b)
	big := limit + 1
	if n-m > limit || m-n > limit {
		return big
	}
	if cap(r.cur) < m+1 {
		r.prev2, r.prev, r.cur = make([]int, m+1), make([]int, m+1), make([]int, m+1)
	}
	prev2, prev, cur := r.prev2[:m+1], r.prev[:m+1], r.cur[:m+1]
	for j := range prev {
		prev[j] = min(j, big)
	}
	for i := 1; i <= n; i++ {
		lo, hi := max(1, i-limit), min(m, i+limit)
		if lo == 1 {
			cur[0] = min(i, big)
		} else {
			cur[lo-1] = big
		}
		if hi < m {
			cur[hi+1] = big
		}
		rowMin := cur[lo-1]
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, prev2[j-2]+1)
			}
			d = min(d, big)
			cur[j] = d
			rowMin = min(rowMin, d)
		}
		if rowMin >= big {
			return big
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[m]
}
