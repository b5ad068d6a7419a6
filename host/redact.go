package host

import "strings"

// redactor hides secrets in what a hosted server says: the values of
// colibri's own variables that ${NAME} put into its environment. A server
// that prints its API key back on stderr, or in an error, must not make
// colibri show it in stderr_tail, an error message or a log line.
type redactor struct {
	r *strings.Replacer // nil: nothing to hide
}

// minSecretLen is the shortest value treated as a secret: hiding every "1"
// or "dev" would garble a server's words and protect nothing.
const minSecretLen = 4

// redacted replaces a secret wherever it appears.
const redacted = "[redacted]"

func newRedactor(secrets []string) *redactor {
	var pairs []string
	for _, s := range secrets {
		if len(s) >= minSecretLen {
			pairs = append(pairs, s, redacted)
		}
	}
	if len(pairs) == 0 {
		return &redactor{}
	}
	return &redactor{r: strings.NewReplacer(pairs...)}
}

// apply returns s with every secret replaced.
func (r *redactor) apply(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}
