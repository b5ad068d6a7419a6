package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// fingerprintMembers are the members of an entry that say what runs, and
// so make its fingerprint (docs/security.md, locked pins): a change of any
// is an upgrade of the server, or a new server under the old name.
var fingerprintMembers = []string{"args", "command", "cwd", "env", "headers", "jail", "sandbox", "source", "url"}

// EntryFingerprint is an entry's fingerprint: the SHA-256 of the canonical
// JSON of its members that say what runs, as written (after the top-level
// defaults, before any ${NAME} expansion or path resolution), and one of
// each member, so that a change can be named. env and headers count by
// their names, with the value text only where it holds a ${NAME}
// reference or does not look secret: a secret never reaches a pin file.
type EntryFingerprint struct {
	Digest string
	Fields map[string]string
}

// fingerprint computes it from raw, the entry's members as written, and
// sandbox, the top-level sandbox (nil when none).
func fingerprint(raw map[string]json.RawMessage, sandbox json.RawMessage) *EntryFingerprint {
	whole := map[string]any{}
	fp := &EntryFingerprint{Fields: map[string]string{}}
	for _, key := range fingerprintMembers {
		v, ok := raw[key]
		if _, command := raw["command"]; !ok && key == "sandbox" && sandbox != nil && command {
			v, ok = sandbox, true
		}
		if !ok {
			continue
		}
		var decoded any
		if json.Unmarshal(v, &decoded) != nil {
			continue
		}
		if key == "env" || key == "headers" {
			decoded = scrubbed(decoded)
		}
		whole[key] = decoded
		b, _ := json.Marshal(decoded) // encoding/json sorts map keys
		fp.Fields[key] = digest(b)
	}
	b, _ := json.Marshal(whole)
	fp.Digest = digest(b)
	return fp
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// scrubbed is an env or headers object with each value that may be a
// secret replaced by null: its name still counts.
func scrubbed(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for name, val := range m {
		s, _ := val.(string)
		if keptValue(name, s) {
			out[name] = s
		} else {
			out[name] = nil
		}
	}
	return out
}

// reference is a ${NAME} reference in a value.
var reference = regexp.MustCompile(`\$\{[^}]*\}`)

// authScheme is the scheme word an Authorization-style value starts with.
var authScheme = regexp.MustCompile(`(?i)^\s*(bearer|basic|token|apikey|digest)?\s*$`)

// keptValue reports whether the text of env or header name's value s goes
// into the fingerprint: a ${NAME} reference (with at most a scheme word
// around it, "Bearer ${TOKEN}") whatever the name; else a value that
// does not look secret under a name that does not either. What is left
// of a value beside its references counts as a value of its own
// ("sk-live-123${X}" holds a literal secret), and a URL's password
// ("postgres://u:pw@db") or a name such as DB_PASS looks secret.
func keptValue(name, s string) bool {
	if strings.Contains(s, "${") {
		rest := reference.ReplaceAllString(s, "")
		return authScheme.MatchString(rest) || (!secretish(name) && !secretValue(rest))
	}
	return !secretish(name) && !secretValue(s)
}

// secretish is SecretName, with the names only a fingerprint must also
// keep out (a password under PASS or PWD, a private key, a session).
func secretish(name string) bool {
	if SecretName(name) {
		return true
	}
	u := strings.ToUpper(name)
	for _, w := range []string{"PASS", "PWD", "PRIVATE", "SESSION", "BEARER", "DSN"} {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

// userinfo is a URL that carries a password: scheme://user:password@.
var userinfo = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@`)

// tokenLike is a value that looks like a credential whatever its name: a
// known token prefix, or a long run of letters and digits mixed.
var (
	tokenPrefix = regexp.MustCompile(`^(ghp_|gho_|ghs_|ghu_|github_pat_|glpat-|sk-|sk_|xox[abprs]-|AKIA|ASIA|AIza|ya29\.|eyJ)`)
	tokenRun    = regexp.MustCompile(`^[A-Za-z0-9_\-+/=.]{24,}$`)
	hasDigit    = regexp.MustCompile(`[0-9]`)
	hasLetter   = regexp.MustCompile(`[A-Za-z]`)
)

func secretValue(s string) bool {
	if tokenPrefix.MatchString(s) || userinfo.MatchString(s) {
		return true
	}
	return tokenRun.MatchString(s) && !strings.Contains(s, "/") && hasDigit.MatchString(s) && hasLetter.MatchString(s)
}

// Fingerprint is the fingerprint of srv's entry as the registry file wrote
// it (nil for an entry built in code, not read from a file).
func (s *Server) Fingerprint() *EntryFingerprint { return s.fingerprint }

// UnversionedPackage is the package an entry started by a package runner
// names without a version (`npx -y PKG`, `uvx PKG`, `bunx PKG`), "" when
// the entry names one (`PKG@1.2.3`, `PKG==1.2.3`) or runs no package
// runner: such an entry's upgrades change no member of it, so colibri
// cannot tell an upgrade from a change.
func (s *Server) UnversionedPackage() string {
	base := strings.TrimSuffix(filepath.Base(s.Command), ".exe")
	args := s.Args
	switch base {
	case "npx", "bunx", "pnpx", "uvx":
	case "pnpm", "yarn":
		if len(args) == 0 || !slices.Contains([]string{"dlx", "exec"}, args[0]) {
			return ""
		}
		args = args[1:]
	default:
		return ""
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--package" || a == "-p" || a == "--from" {
			if i+1 < len(args) {
				return unversioned(base, args[i+1])
			}
			return ""
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		return unversioned(base, a)
	}
	return ""
}

func unversioned(runner, pkg string) string {
	if runner == "uvx" {
		if strings.ContainsAny(pkg, "=@<>~") {
			return ""
		}
		return pkg
	}
	if strings.Contains(strings.TrimPrefix(pkg, "@"), "@") || strings.HasPrefix(pkg, ".") || strings.HasPrefix(pkg, "/") {
		return ""
	}
	return pkg
}
