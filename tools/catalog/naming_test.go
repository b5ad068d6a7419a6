package catalog

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// validName is what every editor accepts (docs/cli.md#aggregate-mode).
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func req(server, prefix, tool string) NameRequest {
	return NameRequest{ToolRef: ToolRef{Server: server, Tool: tool}, Prefix: prefix}
}

func TestExposedNames(t *testing.T) {
	long := strings.Repeat("t", 70)
	for _, tc := range []struct {
		name string
		reqs []NameRequest
		want map[ToolRef]string
	}{
		{"plain", []NameRequest{req("everything", "everything", "echo"), req("demo", "demo", "add")},
			map[ToolRef]string{{"everything", "echo"}: "everything__echo", {"demo", "add"}: "demo__add"}},
		{"tool_prefix", []NameRequest{req("github", "gh", "search_issues")},
			map[ToolRef]string{{"github", "search_issues"}: "gh__search_issues"}},
		{"other characters become _", []NameRequest{req("my.srv", "my.srv", "get file/contents:v2 ✓")},
			map[ToolRef]string{{"my.srv", "get file/contents:v2 ✓"}: "my_srv__get_file_contents_v2__"}},
		{"invalid UTF-8: one _ a byte", []NameRequest{req("s", "s", "a\xff\xfeb")},
			map[ToolRef]string{{"s", "a\xff\xfeb"}: "s__a__b"}},
		// Server names may hold "_": routing never splits on "__".
		{"underscores kept", []NameRequest{req("a_b", "a_b", "__c")},
			map[ToolRef]string{{"a_b", "__c"}: "a_b____c"}},
		{"too long: shortened with a hash", []NameRequest{req("s", "s", long)},
			map[ToolRef]string{{"s", long}: "s__" + strings.Repeat("t", 54) + "_" + hashOf("s", long)}},
		{"exactly 64 kept", []NameRequest{req("s", "s", strings.Repeat("t", 61))},
			map[ToolRef]string{{"s", strings.Repeat("t", 61)}: "s__" + strings.Repeat("t", 61)}},
		// Two tools that would share a name both get a hash: neither
		// keeps it by the accident of coming first.
		{"colliding after sanitizing", []NameRequest{req("s", "s", "a.b"), req("s", "s", "a_b"), req("s", "s", "c")},
			map[ToolRef]string{{"s", "a.b"}: "s__a_b_" + hashOf("s", "a.b"), {"s", "a_b"}: "s__a_b_" + hashOf("s", "a_b"), {"s", "c"}: "s__c"}},
		{"colliding across servers", []NameRequest{req("a.b", "a.b", "x"), req("a_b", "a_b", "x")},
			map[ToolRef]string{{"a.b", "x"}: "a_b__x_" + hashOf("a.b", "x"), {"a_b", "x"}: "a_b__x_" + hashOf("a_b", "x")}},
		{"a tool listed twice is one tool", []NameRequest{req("s", "s", "x"), req("s", "s", "x")},
			map[ToolRef]string{{"s", "x"}: "s__x"}},
		// A hashed name gives way to a tool whose own name it would take.
		{"hashed name taken by a plain one", []NameRequest{req("s", "s", long), req("s", "s", strings.Repeat("t", 54)+"_"+hashOf("s", long))},
			map[ToolRef]string{
				{"s", long}: "s__" + strings.Repeat("t", 54) + "_" + saltedHashOf("s", long, 1),
				{"s", strings.Repeat("t", 54) + "_" + hashOf("s", long)}: "s__" + strings.Repeat("t", 54) + "_" + hashOf("s", long)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ExposedNames(tc.reqs, own...)
			if len(got) != len(tc.want) {
				t.Errorf("got %d names, want %d: %v", len(got), len(tc.want), got)
			}
			for ref, want := range tc.want {
				if got[ref] != want {
					t.Errorf("%v: %q, want %q", ref, got[ref], want)
				}
				if !validName.MatchString(got[ref]) {
					t.Errorf("%v: %q is not a valid tool name", ref, got[ref])
				}
			}
		})
	}
}

// colibri's own names are never given to a hosted tool.
func TestExposedNamesReserved(t *testing.T) {
	got := ExposedNames([]NameRequest{req("s", "s", "x"), req("c", "c", "d")}, "s__x")
	if got[ToolRef{"s", "x"}] != "s__x_"+hashOf("s", "x") || got[ToolRef{"c", "d"}] != "c__d" {
		t.Errorf("names = %v", got)
	}
}

func hashOf(server, tool string) string {
	return withHash("", ToolRef{server, tool}, 0)[1:]
}

func saltedHashOf(server, tool string, salt int) string {
	return withHash("", ToolRef{server, tool}, salt)[1:]
}

// FuzzExposedNames: whatever the hosted servers call their tools, every
// name is valid for an editor, no two tools share one, none is reserved,
// and the names do not depend on the order the tools come in.
func FuzzExposedNames(f *testing.F) {
	f.Add("everything", "echo", "demo", "echo", "x", uint64(1))
	f.Add("a.b", "x", "a_b", "x", "a_b__x", uint64(2))
	f.Add("s", strings.Repeat("t", 70), "s", strings.Repeat("t", 71), "s__"+strings.Repeat("t", 61), uint64(3))
	f.Add("", "", "\xff", "\x00", "__", uint64(4))
	f.Fuzz(func(t *testing.T, s1, t1, s2, t2, t3 string, seed uint64) {
		reqs := []NameRequest{req(s1, s1, t1), req(s2, s2, t2), req(s1, s1, t3), req(s2, "p", t3), req(s1, s1, t1+t2)}
		reserved := append(slices.Clone(own), sanitize(s1)+"__"+sanitize(t1))
		got := ExposedNames(reqs, reserved...)
		seen := map[string]ToolRef{}
		for ref, n := range got {
			if !validName.MatchString(n) {
				t.Fatalf("%v: %q is not a valid tool name", ref, n)
			}
			if other, dup := seen[n]; dup {
				t.Fatalf("%v and %v share the name %q", ref, other, n)
			}
			seen[n] = ref
			for _, r := range reserved {
				if n == r {
					t.Fatalf("%v got the reserved name %q", ref, n)
				}
			}
		}
		shuffled := append([]NameRequest(nil), reqs...)
		rand.New(rand.NewPCG(seed, seed)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		// The one prefix per tool is the first given: keep s2's "p" last
		// among t3's requests, as the registry would give one only.
		again := ExposedNames(dedupePrefixes(shuffled, reqs), reserved...)
		for ref, n := range got {
			if again[ref] != n {
				t.Fatalf("%v: %q, then %q with the tools in another order", ref, n, again[ref])
			}
		}
	})
}

// dedupePrefixes gives each tool in shuffled the prefix it first has in
// orig, so that only the order differs.
func dedupePrefixes(shuffled, orig []NameRequest) []NameRequest {
	first := map[ToolRef]string{}
	for _, r := range orig {
		if _, ok := first[r.ToolRef]; !ok {
			first[r.ToolRef] = r.Prefix
		}
	}
	out := make([]NameRequest, len(shuffled))
	for i, r := range shuffled {
		out[i] = NameRequest{ToolRef: r.ToolRef, Prefix: first[r.ToolRef]}
	}
	return out
}
