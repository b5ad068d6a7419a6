package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

func parse(t testing.TB, doc string) *Policy {
	t.Helper()
	if doc == "" {
		return nil
	}
	var p Policy
	if err := json.Unmarshal([]byte(doc), &p); err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return &p
}

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

var (
	none      *Annotations // the server gave no annotations: spec defaults
	readOnly  = &Annotations{ReadOnly: true}
	safeWrite = &Annotations{Destructive: no()}
	closed    = &Annotations{ReadOnly: true, OpenWorld: no()}
	destroys  = &Annotations{Destructive: yes()}
)

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name          string
		global, local string
		tool          string
		ann           *Annotations
		principal     string
		allow         bool
		rule          string
	}{
		{name: "no policy allows", tool: "anything", allow: true},
		{name: "a deny glob", local: `{"tools":{"deny":["*delete*"]}}`, tool: "bulk_delete_all",
			rule: `server:demo tools.deny "*delete*"`},
		{name: "a deny glob that does not match", local: `{"tools":{"deny":["*delete*"]}}`, tool: "get_file", allow: true},
		// A hosted server chooses its names: case never lets one past a rule.
		{name: "a deny glob ignores case", local: `{"tools":{"deny":["*delete*"]}}`, tool: "Bulk_DELETE_All",
			rule: `server:demo tools.deny "*delete*"`},
		{name: "an upper-case deny glob", global: `{"tools":{"deny":["DROP_*"]}}`, tool: "drop_table", rule: `tools.deny "DROP_*"`},
		{name: "an allow list ignores case", local: `{"tools":{"allow":["get_*"]}}`, tool: "GET_File", allow: true,
			rule: `server:demo tools.allow "get_*"`},
		{name: "an allow list admits", local: `{"tools":{"allow":["get_*","search"]}}`, tool: "get_file", allow: true,
			rule: `server:demo tools.allow "get_*"`},
		{name: "an allow list refuses the rest", local: `{"tools":{"allow":["get_*","search"]}}`, tool: "put_file",
			rule: "server:demo tools.allow"},
		{name: "an empty allow list allows nothing", global: `{"tools":{"allow":[]}}`, tool: "get_file", rule: "tools.allow"},
		{name: "deny beats allow in one set", local: `{"tools":{"allow":["*"],"deny":["drop"]}}`, tool: "drop",
			rule: `server:demo tools.deny "drop"`},
		{name: "a global deny beats a server allow", global: `{"tools":{"deny":["drop"]}}`, local: `{"tools":{"allow":["drop"]}}`,
			tool: "drop", rule: `tools.deny "drop"`},
		{name: "a server deny beats a global allow", global: `{"tools":{"allow":["*"]}}`, local: `{"tools":{"deny":["drop"]}}`,
			tool: "drop", rule: `server:demo tools.deny "drop"`},
		{name: "both allow lists must admit", global: `{"tools":{"allow":["get_*"]}}`, local: `{"tools":{"allow":["search"]}}`,
			tool: "search", rule: "tools.allow"},
		{name: "* matches a / too", local: `{"tools":{"deny":["*delete*"]}}`, tool: "fs/delete",
			rule: `server:demo tools.deny "*delete*"`},
		{name: "a deny of * denies a name with a /", global: `{"tools":{"deny":["*"]}}`, tool: "admin/delete_user",
			rule: `tools.deny "*"`},
		{name: "an allow glob admits a name with a /", local: `{"tools":{"allow":["user-profile/*"]}}`, tool: "user-profile/update",
			allow: true, rule: `server:demo tools.allow "user-profile/*"`},
		{name: "a character class", local: `{"tools":{"deny":["rm[a-z]"]}}`, tool: "rmx", rule: `server:demo tools.deny "rm[a-z]"`},

		// deny_destructive: the spec's defaults for absent hints.
		{name: "destructive by default", global: `{"deny_destructive":true}`, tool: "t", ann: none, rule: "deny_destructive"},
		{name: "empty annotations are destructive", global: `{"deny_destructive":true}`, tool: "t", ann: &Annotations{}, rule: "deny_destructive"},
		{name: "read-only is not destructive", global: `{"deny_destructive":true}`, tool: "t", ann: readOnly, allow: true},
		{name: "destructiveHint false", global: `{"deny_destructive":true}`, tool: "t", ann: safeWrite, allow: true},
		{name: "destructiveHint true", global: `{"deny_destructive":true}`, tool: "t", ann: destroys, rule: "deny_destructive"},
		{name: "readOnly wins over destructiveHint", global: `{"deny_destructive":true}`, tool: "t",
			ann: &Annotations{ReadOnly: true, Destructive: yes()}, allow: true},
		{name: "open world by default", local: `{"deny_open_world":true}`, tool: "t", ann: readOnly, rule: "server:demo deny_open_world"},
		{name: "openWorldHint false", local: `{"deny_open_world":true}`, tool: "t", ann: closed, allow: true},
		{name: "openWorldHint true", local: `{"deny_open_world":true}`, tool: "t", ann: &Annotations{ReadOnly: true, OpenWorld: yes()},
			rule: "server:demo deny_open_world"},
		{name: "deny_destructive false is no rule", local: `{"deny_destructive":false}`, tool: "t", ann: none, allow: true},

		// Callers narrow.
		{name: "a caller's allow narrows", local: `{"callers":{"ci-bot":{"tools":{"allow":["search"]}}}}`,
			tool: "get_file", principal: "ci-bot", rule: "server:demo callers.ci-bot tools.allow"},
		{name: "a caller's allow admits its tool", local: `{"callers":{"ci-bot":{"tools":{"allow":["search"]}}}}`,
			tool: "search", principal: "ci-bot", allow: true, rule: `server:demo callers.ci-bot tools.allow "search"`},
		{name: "another caller is not narrowed", local: `{"callers":{"ci-bot":{"tools":{"allow":["search"]}}}}`,
			tool: "get_file", principal: "alice", allow: true},
		{name: "a caller's allow cannot widen a deny", global: `{"tools":{"deny":["search"]},"callers":{"ci-bot":{"tools":{"allow":["search"]}}}}`,
			tool: "search", principal: "ci-bot", rule: `tools.deny "search"`},
		{name: "a caller's allow cannot widen an allow list", local: `{"tools":{"allow":["get_*"]},"callers":{"ci-bot":{"tools":{"allow":["*"]}}}}`,
			tool: "search", principal: "ci-bot", rule: "server:demo tools.allow"},
		{name: "a caller's annotation rule", global: `{"callers":{"stdio":{"deny_destructive":true}}}`,
			tool: "t", ann: none, principal: "stdio", rule: "callers.stdio deny_destructive"},
		{name: "a token principal", global: `{"callers":{"token:0123456789ab":{"tools":{"deny":["*"]}}}}`,
			tool: "t", principal: "token:0123456789ab", rule: `callers.token:0123456789ab tools.deny "*"`},
		{name: "the first denial is reported", global: `{"deny_destructive":true}`, local: `{"tools":{"deny":["t"]}}`,
			tool: "t", ann: none, rule: "deny_destructive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Rules{Global: parse(t, tc.global), Server: "demo", Local: parse(t, tc.local)}
			got := Decide(r, tc.tool, tc.ann, tc.principal)
			if got.Allow != tc.allow || got.Rule != tc.rule {
				t.Errorf("Decide(%q) = %+v, want {Allow:%v Rule:%s}", tc.tool, got, tc.allow, tc.rule)
			}
		})
	}
}

// DecideByName denies only what no annotations could save.
func TestDecideByName(t *testing.T) {
	r := Rules{Server: "demo", Local: parse(t, `{"tools":{"deny":["drop"]},"deny_destructive":true,"deny_open_world":true}`)}
	if d := DecideByName(r, "drop", ""); d.Allow || d.Rule != `server:demo tools.deny "drop"` {
		t.Errorf("a denied name: %+v", d)
	}
	if d := DecideByName(r, "get", ""); !d.Allow {
		t.Errorf("a name whose fate hangs on its annotations was denied: %+v", d)
	}
	if d := Decide(r, "get", nil, ""); d.Allow {
		t.Errorf("the same tool without annotations was allowed: %+v", d)
	}
}

// A malformed pattern built in code (the registry refuses them) fails closed.
func TestMalformedPatternFailsClosed(t *testing.T) {
	r := Rules{Server: "demo", Local: &Policy{Set: Set{Tools: &Globs{Deny: []string{"[oops"}}}}}
	if d := Decide(r, "anything", readOnly, ""); d.Allow {
		t.Errorf("a malformed deny pattern allowed a tool: %+v", d)
	}
	r = Rules{Server: "demo", Local: &Policy{Set: Set{Tools: &Globs{Allow: []string{"[oops"}}}}}
	if d := Decide(r, "[oops", readOnly, ""); d.Allow {
		t.Errorf("a malformed allow pattern admitted a tool: %+v", d)
	}
}

func TestProblems(t *testing.T) {
	p := parse(t, `{"tools":{"allow":["ok_*","[bad"],"deny":["a\\"]},
		"callers":{"ci-bot":{"tools":{"deny":["x[-]"]}},"token:XYZ":{},"has space":{},"a/b":{}}}`)
	var got []string
	for _, pr := range p.Problems() {
		got = append(got, pr.Location)
	}
	want := "/tools/allow/1 /tools/deny/0 /callers/a~1b /callers/ci-bot/tools/deny/0 /callers/has space /callers/token:XYZ"
	if strings.Join(got, " ") != want {
		t.Errorf("problems at %q, want %q", strings.Join(got, " "), want)
	}
	if ps := parse(t, `{"tools":{"allow":["get_*","?x","[a-c]*"]},"callers":{"ci-bot":{},"token:0123456789ab":{},"stdio":{}}}`).Problems(); len(ps) != 0 {
		t.Errorf("a valid policy: %v", ps)
	}
}
