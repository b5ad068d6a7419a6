package policy

import (
	"encoding/json"
	"path"
	"testing"
)

// FuzzDecide checks the properties the contract promises of any policy:
// a matching deny always wins; a caller's rules never widen what the rest
// allow; adding a deny never allows more; and Decide never panics.
func FuzzDecide(f *testing.F) {
	f.Add(`{"tools":{"deny":["*delete*"]}}`, `{"tools":{"allow":["get_*"]},"callers":{"ci-bot":{"tools":{"allow":["search"]}}}}`,
		"get_file", "ci-bot", byte(0), "*")
	f.Add(`{"deny_destructive":true}`, `{"deny_open_world":true,"callers":{"stdio":{"deny_destructive":true}}}`,
		"search", "stdio", byte(0b111), "s*")
	f.Add(``, `{"tools":{"allow":[]}}`, "x", "", byte(1), "[")
	f.Add(`{"callers":{"a":{"tools":{"allow":["*"],"deny":["b?"]}}}}`, ``, "bc", "a", byte(0b10110), "?c")
	f.Fuzz(func(t *testing.T, global, local, tool, principal string, hints byte, extra string) {
		g, ok1 := decode(global)
		l, ok2 := decode(local)
		if !ok1 || !ok2 {
			return
		}
		ann := annotations(hints)
		r := Rules{Global: g, Server: "s", Local: l}
		d := Decide(r, tool, ann, principal)

		// A matching deny, in any set that applies, wins.
		for _, sc := range r.scopes(principal) {
			if sc.set.Tools == nil {
				continue
			}
			for _, p := range sc.set.Tools.Deny {
				if ok, _ := path.Match(p, tool); ok && d.Allow {
					t.Fatalf("deny %q matches %q, yet it was allowed", p, tool)
				}
			}
		}
		// Callers never widen: without them, at least as much is allowed.
		if d.Allow && !Decide(Rules{Global: withoutCallers(g), Server: "s", Local: withoutCallers(l)}, tool, ann, principal).Allow {
			t.Fatalf("a caller's rules allowed %q, which the rest deny", tool)
		}
		// Adding a deny anywhere never allows more.
		for _, where := range []func(*Policy) *Set{
			func(p *Policy) *Set { return &p.Set },
			func(p *Policy) *Set {
				if p.Callers == nil {
					p.Callers = map[string]*Set{}
				}
				if p.Callers[principal] == nil {
					p.Callers[principal] = &Set{}
				}
				return p.Callers[principal]
			},
		} {
			for _, side := range []string{"global", "local"} {
				g2, _ := decode(global)
				l2, _ := decode(local)
				p := &g2
				if side == "local" {
					p = &l2
				}
				if *p == nil {
					*p = &Policy{}
				}
				s := where(*p)
				if s.Tools == nil {
					s.Tools = &Globs{}
				}
				s.Tools.Deny = append(s.Tools.Deny, extra)
				if Decide(Rules{Global: g2, Server: "s", Local: l2}, tool, ann, principal).Allow && !d.Allow {
					t.Fatalf("adding deny %q to the %s policy allowed %q", extra, side, tool)
				}
			}
		}
		// Denying by name alone is never wrong once annotations are known.
		if !DecideByName(r, tool, principal).Allow && d.Allow {
			t.Fatalf("DecideByName denied %q, which its annotations allow", tool)
		}
	})
}

func decode(doc string) (*Policy, bool) {
	if doc == "" {
		return nil, true
	}
	var p Policy
	if json.Unmarshal([]byte(doc), &p) != nil {
		return nil, false
	}
	return &p, true
}

func withoutCallers(p *Policy) *Policy {
	if p == nil {
		return nil
	}
	return &Policy{Set: p.Set}
}

// annotations reads a tool's hints from bits: read-only; destructive given,
// and its value; open world given, and its value.
func annotations(b byte) *Annotations {
	if b&0x80 != 0 {
		return nil
	}
	a := &Annotations{ReadOnly: b&1 != 0}
	if b&2 != 0 {
		v := b&4 != 0
		a.Destructive = &v
	}
	if b&8 != 0 {
		v := b&16 != 0
		a.OpenWorld = &v
	}
	return a
}
