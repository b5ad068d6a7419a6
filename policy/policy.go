// Package policy decides which hosted tools a caller may see and call
// (docs/operations.md#policy). It is pure: rules, a tool's name and annotations
// and the caller's principal go in, a decision and the rule that made it come
// out. No I/O, no clock, nothing of the host.
//
//	d := policy.Decide(policy.Rules{Global: reg.Policy, Server: "demo", Local: srv.Policy},
//		"delete_file", policy.FromHints(false, nil, nil), "ci-bot")
//	if !d.Allow {
//		// d.Rule says which rule denied it: `server:demo tools.deny "*delete*"`
//	}
//
// A tool is allowed only when every rule set that applies allows it: the
// registry's top-level policy, the server's own, and in each the entry of
// "callers" for this principal. So a deny anywhere wins, and a caller's
// rules can only narrow what the others allow, never widen it.
package policy

import "strconv"

// Policy is a "policy" object of the registry: the top-level one, which
// applies to every server, or a server's own.
type Policy struct {
	Set
	// Callers maps a principal (docs/operations.md#who-is-calling-principals: "stdio", a token's
	// NAME, "token:" + 12 hex digits) to rules that apply to that caller
	// only, on top of the rest.
	Callers map[string]*Set `json:"callers,omitempty"`
}

// Set is one set of rules: the shape of a policy without "callers", and of
// each entry of "callers".
type Set struct {
	// Tools holds globs (Match: path.Match's syntax, where * also matches
	// a /) on the hosted tool's name.
	Tools *Globs `json:"tools,omitempty"`
	// Prompts holds globs on a hosted prompt's name, read as Tools' are;
	// Resources, globs on a hosted resource's URI (or a template's URI
	// template), read by MatchURI. Both apply wherever colibri offers a
	// hosted server's prompts and resources (serve --only: docs/protocol.md).
	Prompts   *Globs `json:"prompts,omitempty"`
	Resources *Globs `json:"resources,omitempty"`
	// DenyDestructive denies a tool unless its annotations say
	// readOnlyHint: true or destructiveHint: false.
	DenyDestructive bool `json:"deny_destructive,omitempty"`
	// DenyOpenWorld denies a tool unless its annotations say
	// openWorldHint: false.
	DenyOpenWorld bool `json:"deny_open_world,omitempty"`
}

// Globs are allow and deny patterns. A name is allowed when no deny pattern
// matches it and, where an allow list exists (even an empty one), one of its
// patterns matches.
type Globs struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Annotations are the hints of a hosted tool that the policy reads, as the
// hosted server's own tools/list gave them (never from a request). A nil
// pointer is a hint the server left out.
type Annotations struct {
	ReadOnly    bool  // readOnlyHint; absent means false
	Destructive *bool // destructiveHint; absent means true
	OpenWorld   *bool // openWorldHint; absent means true
}

// FromHints builds Annotations from a tool's hints, as go-sdk's
// mcp.ToolAnnotations holds them (nil annotations: pass false, nil, nil).
func FromHints(readOnly bool, destructive, openWorld *bool) *Annotations {
	return &Annotations{ReadOnly: readOnly, Destructive: destructive, OpenWorld: openWorld}
}

// destructive applies the MCP specification's defaults: a tool may destroy
// unless it says it only reads, or says it does not destroy.
func (a *Annotations) destructive() bool {
	if a == nil {
		return true
	}
	if a.ReadOnly {
		return false
	}
	return a.Destructive == nil || *a.Destructive
}

// openWorld applies the specification's default: a tool reaches the open
// world unless it says it does not.
func (a *Annotations) openWorld() bool {
	return a == nil || a.OpenWorld == nil || *a.OpenWorld
}

// Rules are the policies that apply to one server's tools.
type Rules struct {
	Global *Policy // the registry's top-level "policy"; nil when absent
	Server string  // the server's name, to name its rules in a Decision
	Local  *Policy // the server's own "policy"; nil when absent
}

// Empty reports whether no rule at all applies: every tool is allowed.
func (r Rules) Empty() bool { return r.Global == nil && r.Local == nil }

// Decision is the outcome for one tool and one caller.
type Decision struct {
	Allow bool
	// Rule names the rule that decided, as an operator finds it in the
	// registry: `tools.deny "*delete*"`, `deny_destructive`,
	// `server:demo callers.ci-bot tools.allow` (no pattern of that allow
	// list matched). For an allowed tool it is the innermost allow pattern
	// that admitted it, or "" when no rule concerned the tool.
	Rule string
}

// Decide decides whether principal may see and call tool, whose hosted
// annotations are ann (nil: the server gave none, so the specification's
// defaults apply). Rule sets are read in a fixed order, top-level before the
// server's and each policy before its callers' entry, and the first denial
// is the one reported.
func Decide(r Rules, tool string, ann *Annotations, principal string) Decision {
	allowRule := ""
	for _, sc := range r.scopes(principal) {
		if rule, ok := sc.set.deny(tool, ann); ok {
			return Decision{Allow: false, Rule: sc.prefix + rule}
		}
		if rule := sc.set.allowedBy(tool); rule != "" {
			allowRule = sc.prefix + rule
		}
	}
	return Decision{Allow: true, Rule: allowRule}
}

// DecideByName is the decision as far as the tool's name and the caller
// settle it, before its annotations are known: it assumes the most
// permissive annotations (read-only, closed world). A denial here holds
// whatever the hosted server's list will say, so a call can be refused
// before anything is started; an allow is only provisional, and Decide must
// be asked again once the annotations are known.
func DecideByName(r Rules, tool, principal string) Decision {
	no := false
	return Decide(r, tool, &Annotations{ReadOnly: true, Destructive: &no, OpenWorld: &no}, principal)
}

type scope struct {
	prefix string // how the set's rules are named
	set    *Set
}

// scopes are the rule sets that apply to principal, in the order they are read.
func (r Rules) scopes(principal string) []scope {
	var out []scope
	add := func(prefix string, p *Policy) {
		if p == nil {
			return
		}
		out = append(out, scope{prefix, &p.Set})
		if c := p.Callers[principal]; c != nil {
			out = append(out, scope{prefix + "callers." + principal + " ", c})
		}
	}
	add("", r.Global)
	add("server:"+r.Server+" ", r.Local)
	return out
}

// deny reports whether the set denies tool, and by which rule.
func (s *Set) deny(tool string, ann *Annotations) (string, bool) {
	if g := s.Tools; g != nil {
		for _, p := range g.Deny {
			if ok, err := Match(p, tool); ok || err != nil { // a malformed deny pattern denies
				return "tools.deny " + strconv.Quote(p), true
			}
		}
		if g.Allow != nil && matchAny(g.Allow, tool) == "" {
			return "tools.allow", true // no pattern of the allow list matched
		}
	}
	if s.DenyDestructive && ann.destructive() {
		return "deny_destructive", true
	}
	if s.DenyOpenWorld && ann.openWorld() {
		return "deny_open_world", true
	}
	return "", false
}

// allowedBy is the allow pattern of the set that matches tool, named as a
// rule, or "".
func (s *Set) allowedBy(tool string) string {
	if s.Tools == nil || s.Tools.Allow == nil {
		return ""
	}
	if p := matchAny(s.Tools.Allow, tool); p != "" {
		return "tools.allow " + strconv.Quote(p)
	}
	return ""
}

func matchAny(patterns []string, name string) string {
	for _, p := range patterns {
		if match(p, name) {
			return p
		}
	}
	return ""
}

// match is Match. A malformed pattern matches nothing, so a malformed
// allow pattern admits nothing (and deny treats one as a match): the policy
// fails closed. The registry refuses such patterns (Problems), so only a
// policy built in code can hold one.
func match(pattern, name string) bool {
	ok, err := Match(pattern, name)
	return err == nil && ok
}
