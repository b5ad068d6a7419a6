package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// Prompts and resources (docs/protocol.md, "One server, fully"): the
// "prompts" and "resources" rules sit beside "tools" in every rule set, and
// are read the same way (a deny anywhere wins, an allow list admits only
// what it names, a caller's rules narrow), without annotations.

// DecidePrompt decides whether principal may see and get the hosted prompt
// name.
func DecidePrompt(r Rules, name, principal string) Decision {
	return r.decideBy("prompts", func(s *Set) *Globs { return s.Prompts }, name, match, principal)
}

// DecideResource decides whether principal may see, read or subscribe to
// the hosted resource uri. A URI that RFC 3986 normalization would change
// (URINormal) is refused whatever the rules: a pattern could not say what
// it names.
func DecideResource(r Rules, uri, principal string) Decision {
	if why := URINormal(uri); why != "" {
		return Decision{Allow: false, Rule: "resources: " + why}
	}
	return r.decideBy("resources", func(s *Set) *Globs { return s.Resources }, uri, matchURIOK, principal)
}

// DecideTemplate decides whether principal may see a hosted resource
// template, and ask completions of it: the "resources" patterns are matched
// against its URI template as written ("file:///{path}").
func DecideTemplate(r Rules, uriTemplate, principal string) Decision {
	return r.decideBy("resources", func(s *Set) *Globs { return s.Resources }, uriTemplate, matchURIOK, principal)
}

// decideBy is Decide for one kind of rule, the globs of each set that
// field picks, matched by m.
func (r Rules) decideBy(kind string, field func(*Set) *Globs, name string, m func(pattern, name string) bool, principal string) Decision {
	allowRule := ""
	for _, sc := range r.scopes(principal) {
		g := field(sc.set)
		if g == nil {
			continue
		}
		for _, p := range g.Deny {
			if !validGlob(p) || m(p, name) { // a malformed deny pattern denies
				return Decision{Allow: false, Rule: sc.prefix + kind + ".deny " + strconv.Quote(p)}
			}
		}
		if g.Allow != nil {
			admitted := ""
			for _, p := range g.Allow {
				if m(p, name) {
					admitted = p
					break
				}
			}
			if admitted == "" {
				return Decision{Allow: false, Rule: sc.prefix + kind + ".allow"}
			}
			allowRule = sc.prefix + kind + ".allow " + strconv.Quote(admitted)
		}
	}
	return Decision{Allow: true, Rule: allowRule}
}

// MatchURI reports whether a resource URI (or URI template) matches a
// pattern of the "resources" rules: path.Match's syntax, `*` and `?`
// crossing `/` as they do in tool names, and case ignored only in the
// scheme and the host (RFC 3986 section 6.2.2.1: the rest of a URI is
// case-sensitive), percent-encodings compared with their hex digits in
// capitals. The URI is not checked for normalization here: DecideResource
// does that.
func MatchURI(pattern, uri string) (bool, error) {
	if !validGlob(pattern) {
		_, err := Match(pattern, "")
		return false, err
	}
	return glob(caseNormal(pattern), caseNormal(uri)), nil
}

func matchURIOK(pattern, uri string) bool {
	ok, err := MatchURI(pattern, uri)
	return err == nil && ok
}

func validGlob(p string) bool {
	_, err := Match(p, "")
	return err == nil
}

// caseNormal is RFC 3986's case normalization of a URI (section 6.2.2.1):
// the scheme and the host in small letters, percent-encodings' hex digits
// in capitals; the rest as it is.
func caseNormal(uri string) string {
	var b strings.Builder
	b.Grow(len(uri))
	rest := uri
	if i := strings.Index(rest, ":"); i > 0 && isScheme(rest[:i]) {
		b.WriteString(FoldASCII(rest[:i+1]))
		rest = rest[i+1:]
		if strings.HasPrefix(rest, "//") {
			end := strings.IndexAny(rest[2:], "/?#")
			if end < 0 {
				end = len(rest) - 2
			}
			auth := rest[2 : 2+end]
			host := auth
			if at := strings.LastIndex(auth, "@"); at >= 0 {
				b.WriteString("//" + auth[:at+1])
				host = auth[at+1:]
			} else {
				b.WriteString("//")
			}
			b.WriteString(FoldASCII(host))
			rest = rest[2+end:]
		}
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if c == '%' && i+2 < len(rest) && isHex(rest[i+1]) && isHex(rest[i+2]) {
			b.WriteByte('%')
			b.WriteByte(upperHex(rest[i+1]))
			b.WriteByte(upperHex(rest[i+2]))
			i += 2
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// URINormal says why RFC 3986 normalization (section 6.2.2) would change
// uri beyond the case of its scheme, host and percent-encodings, or ""
// when it would not: a dot segment ("/./", "/../"), a percent-encoded
// separator ("%2F", "%5C") or an encoded character that needs no encoding
// (an unreserved one: "%2E", "%41"), a "%" that starts no encoding. Such a
// URI can name one resource to the hosted server and look like another to
// a pattern, so colibri refuses it.
func URINormal(uri string) string {
	for i := 0; i < len(uri); i++ {
		if uri[i] != '%' {
			continue
		}
		if i+2 >= len(uri) || !isHex(uri[i+1]) || !isHex(uri[i+2]) {
			return fmt.Sprintf("a %% at byte %d starts no percent-encoding", i)
		}
		c := unhex(uri[i+1])<<4 | unhex(uri[i+2])
		switch {
		case c == '/' || c == '\\':
			return fmt.Sprintf("an encoded separator (%s) at byte %d", uri[i:i+3], i)
		case isUnreserved(c):
			return fmt.Sprintf("an encoded %q (%s) at byte %d, which needs no encoding", rune(c), uri[i:i+3], i)
		}
	}
	path := uri
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if i := strings.Index(path, ":"); i > 0 && isScheme(path[:i]) {
		path = path[i+1:]
		if strings.HasPrefix(path, "//") {
			if j := strings.Index(path[2:], "/"); j >= 0 {
				path = path[2+j:]
			} else {
				path = ""
			}
		}
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." {
			return fmt.Sprintf("a dot segment (%q) in its path", seg)
		}
	}
	return ""
}

func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		alpha := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !alpha && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func upperHex(c byte) byte {
	if 'a' <= c && c <= 'f' {
		return c - 'a' + 'A'
	}
	return c
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
