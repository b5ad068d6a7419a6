package policy

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
)

// Problem is one mistake in a policy, at a JSON Pointer (RFC 6901) location
// relative to the policy object ("/tools/deny/0").
type Problem struct {
	Location string
	Message  string
}

// principalPattern is what a key of "callers" may be: a token file's NAME
// (internal/httpserve), colibri's own principals (stdio, anonymous),
// or "token:" and the first 12 hex digits of an unnamed token's SHA-256.
// The registry's JSON Schema holds the same pattern.
var principalPattern = regexp.MustCompile(`^(?:[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}|token:[0-9a-f]{12})$`)

// Problems are the policy's mistakes that its JSON Schema cannot state: a
// pattern path.Match refuses (a pattern that matches nothing while looking
// right would be a silent hole in a deny list), a key of "callers" that no
// principal can have.
func (p *Policy) Problems() []Problem {
	if p == nil {
		return nil
	}
	ps := p.Set.problems("")
	names := make([]string, 0, len(p.Callers))
	for name := range p.Callers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		at := "/callers/" + escape(name)
		if !principalPattern.MatchString(name) {
			ps = append(ps, Problem{at, fmt.Sprintf("%q is not a principal: want a token file's NAME (letters, digits and _.@-), stdio, anonymous, or token: and 12 lower-case hex digits", name)})
		}
		if s := p.Callers[name]; s != nil {
			ps = append(ps, s.problems(at)...)
		}
	}
	return ps
}

func (s *Set) problems(at string) []Problem {
	var ps []Problem
	check := func(kind, list string, patterns []string) {
		for i, pat := range patterns {
			if _, err := path.Match(pat, ""); err != nil {
				ps = append(ps, Problem{at + "/" + kind + "/" + list + "/" + strconv.Itoa(i),
					fmt.Sprintf("%q is not a valid glob (path.Match: %v): check its brackets and backslashes", pat, err)})
			}
		}
	}
	for _, k := range []struct {
		kind string
		g    *Globs
	}{{"tools", s.Tools}, {"prompts", s.Prompts}, {"resources", s.Resources}} {
		if k.g != nil {
			check(k.kind, "allow", k.g.Allow)
			check(k.kind, "deny", k.g.Deny)
		}
	}
	return ps
}

// escape escapes a JSON Pointer reference token (RFC 6901 section 3).
func escape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}
