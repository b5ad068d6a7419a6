package registry_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Remote ("url") entries: each rule of docs/registry.md, with the
// exact message at its JSON location.
func TestRemoteEntries(t *testing.T) {
	const at = "/servers/r"
	cases := []struct {
		name, entry string
		want        []string // exact problems, "LOCATION: message"
	}{
		{"https", `{"url":"https://api.example.com/mcp"}`, nil},
		{"http to 127.0.0.1", `{"url":"http://127.0.0.1:8080/mcp"}`, nil},
		{"http to 127.1.2.3", `{"url":"http://127.1.2.3/mcp"}`, nil},
		{"http to ::1", `{"url":"http://[::1]:8080/mcp"}`, nil},
		{"http to localhost", `{"url":"http://localhost:8080/mcp"}`, nil},
		{"http elsewhere, allowed", `{"url":"http://10.0.0.5/mcp","allow_http":true}`, nil},
		{"everything", `{"url":"https://x/mcp","transport":"auto","headers":{"X-A":"${A}"},"bearer_token":"${T}","keepalive_ms":0,"idle_timeout_ms":1000}`, nil},
		{"client credentials", `{"url":"https://x/mcp","oauth":{"grant":"client_credentials","client_id":"c","client_secret":"${S}","scopes":["a"]}}`, nil},
		{"authorization code", `{"url":"https://x/mcp","oauth":{"grant":"authorization_code"}}`, nil},
		{"keepalive on a persistent command", `{"command":"x","lifecycle":"persistent","keepalive_ms":1000}`, nil},

		{"http elsewhere", `{"url":"http://10.0.0.5/mcp"}`,
			[]string{at + `/url: plain http to 10.0.0.5 would send requests (and any token) in clear: use https, or set "allow_http": true`}},
		{"http to a name", `{"url":"http://mcp.example.com/mcp"}`,
			[]string{at + `/url: plain http to mcp.example.com would send requests (and any token) in clear: use https, or set "allow_http": true`}},
		{"other scheme", `{"url":"ftp://x/mcp"}`, []string{at + `/url: scheme "ftp": want https (or http to a loopback address)`}},
		{"not absolute", `{"url":"/mcp"}`, []string{at + `/url: "/mcp" is not an absolute http(s) URL`}},
		{"credentials in the url", `{"url":"https://u:p@x/mcp"}`, []string{at + `/url: must not hold credentials (user:password@): use bearer_token or headers`}},
		{"command and url", `{"command":"x","url":"https://x/mcp"}`, []string{at + `: give "command" (a local server) or "url" (a remote one), not both`}},
		{"args, env, cwd, jail with url", `{"url":"https://x/mcp","args":[],"env":{},"cwd":"/tmp","jail":{"name":"j"}}`, []string{
			at + `/args: "args" cannot go with "url": a remote server is not a process colibri starts`,
			at + `/env: "env" cannot go with "url": a remote server is not a process colibri starts`,
			at + `/cwd: "cwd" cannot go with "url": a remote server is not a process colibri starts`,
			at + `/jail: "jail" cannot go with "url": a remote server is not a process colibri starts`}},
		{"remote keys on a command", `{"command":"x","headers":{},"bearer_token":"t"}`, []string{
			at + `/headers: "headers" applies only to a remote server ("url")`,
			at + `/bearer_token: "bearer_token" applies only to a remote server ("url")`}},
		{"bad transport", `{"url":"https://x/mcp","transport":"websocket"}`,
			[]string{at + `/transport: value must be one of 'streamable_http', 'sse', 'auto'`}},
		{"bearer with oauth", `{"url":"https://x/mcp","bearer_token":"t","oauth":{"grant":"authorization_code"}}`,
			[]string{at + `/bearer_token: "bearer_token" and "oauth" exclude each other: give one way to authenticate`}},
		{"bearer with an Authorization header", `{"url":"https://x/mcp","bearer_token":"t","headers":{"authorization":"Basic x"}}`,
			[]string{at + `/bearer_token: "bearer_token" and the "authorization" header exclude each other: bearer_token sets Authorization`}},
		{"bad grant", `{"url":"https://x/mcp","oauth":{"grant":"password"}}`,
			[]string{at + `/oauth/grant: value must be one of 'client_credentials', 'authorization_code'`}},
		{"client credentials without a client", `{"url":"https://x/mcp","oauth":{"grant":"client_credentials"}}`, []string{
			at + `/oauth/client_id: is required with "grant": "client_credentials"`,
			at + `/oauth/client_secret: is required with "grant": "client_credentials"`}},
		{"a lone $ in a header", `{"url":"https://x/mcp","headers":{"X-A":"a$b"}}`,
			[]string{at + `/headers/X-A: a $ at byte 1 must start ${NAME} or be doubled as $$`}},
		{"a bad bearer variable", `{"url":"https://x/mcp","bearer_token":"${1X}"}`,
			[]string{at + `/bearer_token: ${1X}: not a variable name`}},
		{"credentials with a user only", `{"url":"https://tok@x/mcp"}`, []string{at + `/url: must not hold credentials (user:password@): use bearer_token or headers`}},
		{"no host, a port", `{"url":"https://:443/mcp"}`, []string{at + `/url: "https://:443/mcp" names no host`}},
		{"a fragment", `{"url":"https://x/mcp#tools"}`, []string{at + `/url: must not hold a fragment (#…): it is never sent to the server`}},
		{"an empty fragment", `{"url":"https://x/mcp#"}`, []string{at + `/url: must not hold a fragment (#…): it is never sent to the server`}},
		{"uppercase scheme", `{"url":"HTTPS://x/mcp"}`, nil},
		{"http to 127.0.0.2", `{"url":"http://127.0.0.2/mcp"}`, nil},
		{"http to localhost.evil.com", `{"url":"http://localhost.evil.com/mcp"}`,
			[]string{at + `/url: plain http to localhost.evil.com would send requests (and any token) in clear: use https, or set "allow_http": true`}},
		{"http to 0.0.0.0", `{"url":"http://0.0.0.0:8080/mcp"}`,
			[]string{at + `/url: plain http to 0.0.0.0 would send requests (and any token) in clear: use https, or set "allow_http": true`}},
		{"transport headers", `{"url":"https://x/mcp","headers":{"Host":"evil","content-length":"5","Mcp-Session-Id":"s","X-Ok":"1"}}`, []string{
			at + `/headers/Host: "Host" is set by colibri's HTTP transport, not by headers`,
			at + `/headers/Mcp-Session-Id: "Mcp-Session-Id" is set by colibri's HTTP transport, not by headers`,
			at + `/headers/content-length: "content-length" is set by colibri's HTTP transport, not by headers`}},
		{"a newline in the bearer token", `{"url":"https://x/mcp","bearer_token":"abc\ndef"}`,
			[]string{at + `/bearer_token: holds the control character U+000A at byte 3: control characters are not allowed here`}},
		{"negative keepalive", `{"url":"https://x/mcp","keepalive_ms":-1}`,
			[]string{at + `/keepalive_ms: minimum: got -1, want 0`}},
		{"keepalive per request", `{"command":"x","keepalive_ms":5}`,
			[]string{at + `/keepalive_ms: keepalive_ms applies only with "lifecycle": "persistent"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// add's own check (PlainHTTPHost, so that it can name its flag)
			// refuses exactly what the registry refuses as plain http.
			var e struct {
				URL       string `json:"url"`
				AllowHTTP bool   `json:"allow_http"`
			}
			json.Unmarshal([]byte(tc.entry), &e)
			if plain, refused := registry.PlainHTTPHost(e.URL) != "" && !e.AllowHTTP, strings.Contains(strings.Join(tc.want, ""), "plain http to"); plain != refused {
				t.Errorf("PlainHTTPHost(%q) = %q, and the registry refuses it as plain http: %v", e.URL, registry.PlainHTTPHost(e.URL), refused)
			}
			reg, err := registry.Parse(strings.NewReader(`{"servers":{"r":`+tc.entry+`}}`), "reg.json")
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var re *registry.Error
			if !errors.As(err, &re) {
				t.Fatalf("err = %v (registry %v), want a *registry.Error", err, reg)
			}
			var got []string
			for _, p := range re.Problems {
				got = append(got, p.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

func TestRemoteDefaults(t *testing.T) {
	reg, err := registry.Parse(strings.NewReader(`{"servers":{
		"r":{"url":"https://x/mcp","headers":{"X-B":"1","X-A":"2"}},
		"once":{"url":"https://x/mcp","lifecycle":"per_request","oauth":{"grant":"authorization_code"}},
		"c":{"command":"x"}}}`), "reg.json")
	if err != nil {
		t.Fatal(err)
	}
	r, once, c := reg.Servers["r"], reg.Servers["once"], reg.Servers["c"]
	if !r.IsPersistent() || once.IsPersistent() || c.IsPersistent() {
		t.Errorf("persistent: url %v, url per_request %v, command %v; want true, false, false", r.IsPersistent(), once.IsPersistent(), c.IsPersistent())
	}
	if got := strings.Join(r.HeaderKeys(), ","); got != "X-A,X-B" {
		t.Errorf("header keys %q", got)
	}
	if r.Auth() != "none" || once.Auth() != "oauth" {
		t.Errorf("auth %q, %q", r.Auth(), once.Auth())
	}
	h, b, err := (&registry.Server{Headers: map[string]string{"X": "${A}-$$"}, BearerToken: "${B}"}).ExpandRemote(
		func(n string) (string, bool) { return map[string]string{"A": "a"}[n], n == "A" })
	if err == nil || err.Error() != "bearer_token: ${B} refers to a variable that is not set in colibri's environment" || h != nil || b != "" {
		t.Errorf("expand: %v %v %q", h, err, b)
	}
}
