package registry

import (
	"fmt"
	"path"
	"strings"
)

// passEnvProblems checks pass_env: each a name or a glob (path.Match) with a
// literal start, none that looks secret (docs/registry.md: secrets go
// through env and ${NAME}, where the registry says which variable goes
// where).
func passEnvProblems(at string, names []string) []Problem {
	var ps []Problem
	for i, n := range names {
		loc := fmt.Sprintf("%s/%d", at, i)
		switch {
		case !validGlob(n):
			ps = append(ps, Problem{Location: loc, Message: fmt.Sprintf("%q is not a variable name or a glob such as npm_config_*", n)})
		case strings.IndexAny(n, "*?[") == 0:
			ps = append(ps, Problem{Location: loc, Message: fmt.Sprintf("%q would pass variables of every name, secrets included: start the glob with a literal prefix (npm_config_*)", n)})
		case SecretName(n):
			ps = append(ps, Problem{Location: loc, Message: fmt.Sprintf("%q looks like a secret (*TOKEN*, *KEY*, *SECRET*, *PASSWORD*, *AUTH*, *CREDENTIAL*, …): pass it through \"env\" as \"${%s}\" instead", n, strings.Trim(n, "*?[]"))})
		}
	}
	return ps
}

func validGlob(n string) bool {
	if _, err := path.Match(n, ""); err != nil {
		return false
	}
	for _, r := range n {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("_*?[]-^!", r)) {
			return false
		}
	}
	return true
}

// SecretName reports whether a variable name looks like it holds a secret:
// it holds TOKEN, KEY, SECRET or PASSWORD (the contract's four), or PASSWD,
// CREDENTIAL, COOKIE or AUTH (npm_config__auth is a base64 user:password;
// GOOGLE_APPLICATION_CREDENTIALS), in any case: the words import's
// editorconf.SecretName moves out of an editor's file.
func SecretName(name string) bool {
	u := strings.ToUpper(name)
	for _, w := range []string{"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "COOKIE", "AUTH"} {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

// PassedEnv is the part of environ (NAME=value lines) that patterns let
// through, in environ's order. A name that looks secret is never passed,
// even when a glob matches it (npm_config_*_authToken).
func PassedEnv(patterns, environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || SecretName(name) {
			continue
		}
		for _, p := range patterns {
			if m, _ := path.Match(p, name); m {
				out = append(out, kv)
				break
			}
		}
	}
	return out
}
