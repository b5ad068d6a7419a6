// Package toolsearch ranks hosted tools against a few words of a query, by
// name, title and description: how colibri_external_mcp_list_tools finds a
// tool among every server's without a model reading every list.
//
// It is pure and bounded: the query's words, the tools looked at and the
// text read of each are capped, so that a huge list costs a bounded time.
//
//	ms := toolsearch.Rank("read a file", []toolsearch.Tool{{Server: "fs", Name: "read_text_file", Description: "Read …"}}, 10)
package toolsearch

import (
	"slices"
	"strings"
	"unicode"
)

// Tool is one hosted tool as the search reads it.
type Tool struct {
	Server, Name, Title, Description string
}

// Match is a tool the query found, with its score (higher is better; a
// tool whose every word of the query is in its name scores about 1).
type Match struct {
	Tool  Tool
	Score float64
}

// Bounds of one search.
const (
	MaxWords     = 16      // distinct words of the query; the rest are ignored
	MaxTools     = 100_000 // tools looked at; the rest are ignored
	MaxTextBytes = 1024    // of each description (and title) read
	// TextBudget bounds the descriptions and titles read in one search,
	// together: past it, the remaining tools are ranked by name alone.
	TextBudget = 4 << 20
)

// Field weights: a word of the query found in the tool's name counts most.
const (
	nameWeight  = 1.0
	titleWeight = 0.7
	descWeight  = 0.4
	prefixShare = 0.6 // a query word that only begins a word of the tool
)

// Rank returns at most limit tools that match query, best first (ties by
// server, then name, so that the order is stable).
func Rank(query string, tools []Tool, limit int) []Match {
	words := Words(query)
	slices.Sort(words)
	words = slices.Compact(words)
	if len(words) > MaxWords {
		words = words[:MaxWords]
	}
	if len(words) == 0 || limit <= 0 {
		return nil
	}
	if len(tools) > MaxTools {
		tools = tools[:MaxTools]
	}
	var out []Match
	budget := TextBudget
	for _, t := range tools {
		name := Words(clip(t.Name))
		var title, desc []string
		if budget > 0 {
			title, desc = Words(clip(t.Title)), Words(clip(t.Description))
			budget -= len(clip(t.Title)) + len(clip(t.Description))
		}
		score, matched := 0.0, 0
		for _, w := range words {
			best := max(nameWeight*found(w, name), titleWeight*found(w, title), descWeight*found(w, desc))
			if best > 0 {
				matched++
			}
			score += best
		}
		if score == 0 {
			continue
		}
		// The mean over the query's words, weighed by the share of them
		// found at all: a tool that has most of what was asked for beats
		// one that has one word of it in its name.
		score = score / float64(len(words)) * float64(matched) / float64(len(words))
		// A name made of just the query's words, in any order, is the best
		// answer there is.
		if len(name) == len(words) && score >= nameWeight {
			score += 0.5
		}
		out = append(out, Match{Tool: t, Score: float64(int(score*1000+0.5)) / 1000})
	}
	slices.SortStableFunc(out, func(a, b Match) int {
		switch {
		case a.Score != b.Score:
			if a.Score > b.Score {
				return -1
			}
			return 1
		case a.Tool.Server != b.Tool.Server:
			return strings.Compare(a.Tool.Server, b.Tool.Server)
		}
		return strings.Compare(a.Tool.Name, b.Tool.Name)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// found is 1 when w is one of words, prefixShare when it begins one (three
// letters at least), else 0.
func found(w string, words []string) float64 {
	best := 0.0
	for _, x := range words {
		if x == w {
			return 1
		}
		if len(w) >= 3 && strings.HasPrefix(x, w) || len(x) >= 3 && strings.HasPrefix(w, x) {
			best = prefixShare
		}
	}
	return best
}

func clip(s string) string {
	if len(s) > MaxTextBytes {
		return s[:MaxTextBytes]
	}
	return s
}

// Words splits s into lower-case words: at anything not a letter or digit,
// and where camelCase turns ("readTextFile": read, text, file). A trailing
// plural "s" is dropped from words of four letters or more ("files": file),
// and words of one letter, and a few words that say nothing, are left out.
func Words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) == 0 {
			return
		}
		w := strings.ToLower(string(cur))
		cur = cur[:0]
		if len(w) >= 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		if len(w) < 2 || stop[w] {
			return
		}
		out = append(out, w)
	}
	prev := rune(0)
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

var stop = map[string]bool{"a": true, "an": true, "the": true, "to": true, "of": true, "in": true, "on": true, "for": true,
	"and": true, "or": true, "with": true, "by": true, "from": true, "is": true, "it": true, "my": true, "me": true, "this": true}
