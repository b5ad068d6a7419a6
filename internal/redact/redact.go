// Package redact hides secrets in what a hosted server says: the values of
// colibri's own variables that ${NAME} put into its environment or headers.
// A server that prints its API key back on stderr, or in an error, must not
// make colibri show it in stderr_tail, an error message or a log line.
//
//	secrets := redact.New([]string{token})
//	line = secrets.Apply(line) // "… [redacted] …"
package redact

import "strings"

// Set is the secrets of one hosted server. A nil *Set hides nothing.
type Set struct {
	r       *strings.Replacer // nil: nothing to hide
	secrets []string
}

// minSecretLen is the shortest value treated as a secret: hiding every "1"
// or "dev" would garble a server's words and protect nothing.
const minSecretLen = 4

// Redacted replaces a secret wherever it appears.
const Redacted = "[redacted]"

// New returns the Set of secrets (values shorter than minSecretLen are
// not hidden).
func New(secrets []string) *Set {
	var pairs []string
	for _, s := range secrets {
		// A server's stderr is redacted line by line: a secret of several
		// lines (a PEM key) is hidden line by line too.
		for _, piece := range append([]string{s}, strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })...) {
			if len(piece) >= minSecretLen {
				pairs = append(pairs, piece, Redacted)
			}
		}
	}
	if len(pairs) == 0 {
		return &Set{}
	}
	var secs []string
	for i := 0; i < len(pairs); i += 2 {
		secs = append(secs, pairs[i])
	}
	return &Set{r: strings.NewReplacer(pairs...), secrets: secs}
}

// Apply returns s with every secret replaced.
func (r *Set) Apply(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// Held returns how many bytes at the end of s could begin a secret: a line
// cut there (stderr lines are cut every 4 KiB) must keep them for the next
// piece, or a secret across the cut would be redacted in neither.
func (r *Set) Held(s string) int {
	if r == nil {
		return 0
	}
	n := 0
	for _, sec := range r.secrets {
		for k := min(len(sec)-1, len(s)); k > n; k-- {
			if strings.HasSuffix(s, sec[:k]) {
				n = k
				break
			}
		}
	}
	return n
}

// Empty reports whether there is nothing to hide.
func (r *Set) Empty() bool { return r == nil || r.r == nil }
