package policy

import "testing"

func TestDecidePrompt(t *testing.T) {
	for _, tc := range []struct {
		name          string
		global, local string
		prompt        string
		principal     string
		allow         bool
		rule          string
	}{
		{name: "no policy allows", prompt: "greet", allow: true},
		{name: "tools rules leave prompts alone", local: `{"tools":{"deny":["*"]}}`, prompt: "greet", allow: true},
		{name: "deny all", local: `{"prompts":{"deny":["*"]}}`, prompt: "greet", rule: `server:demo prompts.deny "*"`},
		{name: "case is ignored", global: `{"prompts":{"deny":["*secret*"]}}`, prompt: "Show_SECRET", rule: `prompts.deny "*secret*"`},
		{name: "an allow list admits", local: `{"prompts":{"allow":["simple_*"]}}`, prompt: "simple_prompt", allow: true,
			rule: `server:demo prompts.allow "simple_*"`},
		{name: "an allow list refuses the rest", local: `{"prompts":{"allow":["simple_*"]}}`, prompt: "complex_prompt",
			rule: "server:demo prompts.allow"},
		{name: "a caller narrows", local: `{"callers":{"ci-bot":{"prompts":{"deny":["*"]}}}}`, prompt: "greet", principal: "ci-bot",
			rule: `server:demo callers.ci-bot prompts.deny "*"`},
		{name: "another caller is not narrowed", local: `{"callers":{"ci-bot":{"prompts":{"deny":["*"]}}}}`, prompt: "greet",
			principal: "stdio", allow: true},
		{name: "a malformed deny denies", local: `{"prompts":{"deny":["[x"]}}`, prompt: "greet", rule: `server:demo prompts.deny "[x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Rules{Global: parse(t, tc.global), Server: "demo", Local: parse(t, tc.local)}
			d := DecidePrompt(r, tc.prompt, tc.principal)
			if d.Allow != tc.allow || d.Rule != tc.rule {
				t.Errorf("DecidePrompt(%q) = %+v, want allow %v rule %q", tc.prompt, d, tc.allow, tc.rule)
			}
		})
	}
}

func TestDecideResource(t *testing.T) {
	for _, tc := range []struct {
		name, local, uri string
		allow            bool
		rule             string
	}{
		{name: "no policy allows", uri: "file:///srv/docs/a.md", allow: true},
		{name: "tools rules leave resources alone", local: `{"tools":{"allow":[]}}`, uri: "test://static/resource/1", allow: true},
		{name: "* crosses /", local: `{"resources":{"allow":["file:///srv/docs/*"]}}`, uri: "file:///srv/docs/a/b/c.md", allow: true,
			rule: `server:demo resources.allow "file:///srv/docs/*"`},
		{name: "outside the allow list", local: `{"resources":{"allow":["file:///srv/docs/*"]}}`, uri: "file:///etc/passwd",
			rule: "server:demo resources.allow"},
		{name: "the scheme ignores case", local: `{"resources":{"deny":["file:///etc/*"]}}`, uri: "FILE:///etc/passwd",
			rule: `server:demo resources.deny "file:///etc/*"`},
		{name: "the host ignores case", local: `{"resources":{"deny":["https://example.com/*"]}}`, uri: "https://EXAMPLE.com/x",
			rule: `server:demo resources.deny "https://example.com/*"`},
		{name: "the path keeps its case", local: `{"resources":{"deny":["file:///etc/*"]}}`, uri: "file:///ETC/passwd", allow: true},
		{name: "percent-encodings compare in capitals", local: `{"resources":{"deny":["file:///%C3%A9*"]}}`, uri: "file:///%c3%a9t%c3%a9",
			rule: `server:demo resources.deny "file:///%C3%A9*"`},
		{name: "a dot segment is refused", uri: "file:///srv/docs/../../etc/passwd", rule: `resources: a dot segment ("..") in its path`},
		{name: "a single dot segment is refused", local: `{"resources":{"allow":["file:///srv/*"]}}`, uri: "file:///srv/./x",
			rule: `resources: a dot segment (".") in its path`},
		{name: "a trailing dot segment is refused", uri: "file:///srv/docs/..", rule: `resources: a dot segment ("..") in its path`},
		{name: "an encoded slash is refused", uri: "file:///srv/docs%2F..%2Fetc", rule: "resources: an encoded separator (%2F) at byte 16"},
		{name: "an encoded backslash is refused", uri: "file:///srv%5cx", rule: "resources: an encoded separator (%5c) at byte 11"},
		{name: "an encoded unreserved character is refused", uri: "file:///srv/%2e%2e/etc",
			rule: `resources: an encoded '.' (%2e) at byte 12, which needs no encoding`},
		{name: "a stray percent is refused", uri: "file:///100%", rule: "resources: a % at byte 11 starts no percent-encoding"},
		{name: "dots in a query are not segments", uri: "db://rows?path=../x", allow: true},
		{name: "dots in a name are not segments", uri: "file:///srv/.hidden/..x", allow: true},
		{name: "an opaque URI", local: `{"resources":{"deny":["urn:isbn:*"]}}`, uri: "urn:isbn:0451450523", rule: `server:demo resources.deny "urn:isbn:*"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Rules{Server: "demo", Local: parse(t, tc.local)}
			d := DecideResource(r, tc.uri, "stdio")
			if d.Allow != tc.allow || d.Rule != tc.rule {
				t.Errorf("DecideResource(%q) = %+v, want allow %v rule %q", tc.uri, d, tc.allow, tc.rule)
			}
		})
	}
}

func TestDecideTemplate(t *testing.T) {
	r := Rules{Server: "demo", Local: parse(t, `{"resources":{"allow":["test://static/resource/*"]}}`)}
	if d := DecideTemplate(r, "test://static/resource/{id}", "stdio"); !d.Allow {
		t.Errorf("a template under the allowed prefix: %+v", d)
	}
	if d := DecideTemplate(r, "test://dynamic/{id}", "stdio"); d.Allow {
		t.Errorf("a template outside the allow list: %+v", d)
	}
}

func TestProblemsOfPromptsAndResources(t *testing.T) {
	p := parse(t, `{"prompts":{"deny":["[x"]},"resources":{"allow":["ok","[y"]},"callers":{"bot":{"resources":{"deny":["\\"]}}}}`)
	got := p.Problems()
	want := []string{"/prompts/deny/0", "/resources/allow/1", "/callers/bot/resources/deny/0"}
	if len(got) != len(want) {
		t.Fatalf("problems = %+v, want at %v", got, want)
	}
	for i := range want {
		if got[i].Location != want[i] {
			t.Errorf("problem %d at %q, want %q", i, got[i].Location, want[i])
		}
	}
}
