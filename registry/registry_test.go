package registry_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

func TestParseErrorsNameTheLocation(t *testing.T) {
	cases := []struct {
		name, doc string
		want      []string // each "LOCATION: substring of the message"
	}{
		{"wrong type in args", `{"servers":{"demo":{"command":"x","args":["a",1]}}}`,
			[]string{"/servers/demo/args/1: got number, want string"}},
		{"a malformed glob in a server's policy", `{"servers":{"demo":{"command":"x","policy":{"tools":{"deny":["ok","[oops"]}}}}}`,
			[]string{`/servers/demo/policy/tools/deny/1: "[oops" is not a valid glob`}},
		{"a malformed glob in a caller's rules", `{"policy":{"callers":{"ci-bot":{"tools":{"allow":["a\\"]}}}},"servers":{}}`,
			[]string{`/policy/callers/ci-bot/tools/allow/0: "a\\" is not a valid glob`}},
		{"a malformed glob in a server's prompt rules", `{"servers":{"demo":{"command":"x","policy":{"prompts":{"deny":["[oops"]}}}}}`,
			[]string{`/servers/demo/policy/prompts/deny/0: "[oops" is not a valid glob`}},
		{"a malformed glob in a caller's resource rules", `{"policy":{"callers":{"ci-bot":{"resources":{"allow":["a\\"]}}}},"servers":{}}`,
			[]string{`/policy/callers/ci-bot/resources/allow/0: "a\\" is not a valid glob`}},
		{"a resource rule of the wrong shape", `{"policy":{"resources":{"allow":"file:///*"}},"servers":{}}`,
			[]string{"/policy/resources/allow: got string, want array"}},
		{"a policy key misspelt", `{"policy":{"deny_destructiv":true},"servers":{}}`,
			[]string{`/policy/deny_destructiv: unknown key "deny_destructiv": did you mean "deny_destructive"?`}},
		{"callers of a caller", `{"policy":{"callers":{"a":{"callers":{}}}},"servers":{}}`,
			[]string{`/policy/callers/a/callers: unknown key "callers"`}},
		{"a caller no principal can be", `{"servers":{"demo":{"command":"x","policy":{"callers":{"token:ABC":{}}}}}}`,
			[]string{`/servers/demo/policy/callers/token:ABC: the name "token:ABC" is not allowed`}},
		{"a glob that is not a string", `{"policy":{"tools":{"allow":[1]}},"servers":{}}`,
			[]string{"/policy/tools/allow/0: got number, want string"}},
		{"unknown key", `{"servers":{"demo":{"command":"x","argz":[]}}}`,
			[]string{`/servers/demo/argz: unknown key "argz": did you mean "args"?`}},
		{"unknown top-level key", `{"servers":{},"server":{}}`,
			[]string{`/server: unknown key "server": did you mean "servers"?`}},
		{"unknown key, nothing close", `{"servers":{"demo":{"command":"x","frobnicate":1}}}`,
			[]string{`/servers/demo/frobnicate: unknown key "frobnicate"`}},
		{"Claude Desktop's shape", `{"mcpServers":{"demo":{"command":"x"}}}`,
			[]string{"this looks like an editor's MCP configuration (mcpServers), not a colibri registry: `colibri-mcp import` converts", "/: missing property 'servers'", `/mcpServers: unknown key "mcpServers": did you mean "servers"?`}},
		{"VS Code's shape", `{"servers":{"demo":{"type":"stdio","command":"x"}}}`,
			[]string{`this looks like an editor's MCP configuration ("servers" entries with "type")`, `/servers/demo/type: unknown key "type"`}},
		{"missing command", `{"servers":{"demo":{}}}`,
			[]string{`/servers/demo/command: is required (or "url", for a remote server)`}},
		{"bad server name", `{"servers":{"-bad":{"command":"x"}}}`,
			[]string{`/servers/-bad: the name "-bad" is not allowed`}},
		{"name too long", `{"servers":{"` + strings.Repeat("a", 65) + `":{"command":"x"}}}`,
			[]string{"/servers/" + strings.Repeat("a", 65) + ": the name"}},
		{"timeout as string", `{"servers":{"demo":{"command":"x","timeout_ms":"5"}}}`,
			[]string{"/servers/demo/timeout_ms: got string, want integer"}},
		{"zero timeout", `{"servers":{"demo":{"command":"x","call_timeout_ms":0}}}`,
			[]string{"/servers/demo/call_timeout_ms: minimum"}},
		{"bad lifecycle", `{"servers":{"demo":{"command":"x","lifecycle":"warm"}}}`,
			[]string{"/servers/demo/lifecycle: value must be one of 'per_request', 'persistent'"}},
		{"env value not a string", `{"servers":{"demo":{"command":"x","env":{"A":1}}}}`,
			[]string{"/servers/demo/env/A: got number, want string"}},
		{"lone dollar", `{"servers":{"demo":{"command":"x","env":{"A":"$B"}}}}`,
			[]string{"/servers/demo/env/A: a $ at byte 0 must start ${NAME} or be doubled as $$"}},
		{"jail name and path", `{"servers":{"demo":{"command":"/x","jail":{"name":"a","path":"/b"}}}}`,
			[]string{`/servers/demo/jail: "name" and "path" exclude each other`}},
		{"jail neither", `{"servers":{"demo":{"command":"/x","jail":{"user":"mcp"}}}}`,
			[]string{`/servers/demo/jail: give exactly one of "name"`}},
		{"jail unknown key", `{"servers":{"demo":{"command":"/x","jail":{"name":"a","ip":"1.2.3.4"}}}}`,
			[]string{`/servers/demo/jail/ip: unknown key "ip": did you mean "ip4"?`}},
		{"cwd with an ephemeral jail", `{"servers":{"demo":{"command":"/x","cwd":"/srv","jail":{"path":"/j"}}}}`,
			[]string{`/servers/demo/cwd: "cwd" cannot go with "jail": {"path": …}: jail -c has no working directory`}},
		{"relative cwd in a jail", `{"servers":{"demo":{"command":"/x","cwd":"srv","jail":{"name":"mcp0"}}}}`,
			[]string{"/servers/demo/cwd: with a jail, cwd must be an absolute path inside the jail"}},
		{"duplicate command", `{"servers":{"demo":{"command":"/bin/true","command":"/tmp/evil"}}}`,
			[]string{`/servers/demo/command: the key "command" appears more than once in this object`}},
		{"duplicate server", `{"servers":{"a":{"command":"x"},"b":{"command":"y"},"a":{"command":"z"}}}`,
			[]string{`/servers/a: the key "a" appears more than once`}},
		{"duplicate top-level key", `{"servers":{"a":{"command":"x"}},"servers":{}}`,
			[]string{`/servers: the key "servers" appears more than once`}},
		{"duplicates deep and escaped", `{"servers":{"a/b":{"command":"x","env":{"K":"1","L":"2","K":"3"},"args":[{"x":1,"x":2}]}}}`,
			[]string{`/servers/a~1b/env/K: the key "K" appears`, `/servers/a~1b/args/0/x: the key "x" appears`}},
		{"NUL in an argument", `{"servers":{"demo":{"command":"x","args":["ok","b\u0000c"]}}}`,
			[]string{"/servers/demo/args/1: holds the control character U+0000 at byte 1"}},
		{"escape in the command", `{"servers":{"demo":{"command":"/bin/x\u001b[2J"}}}`,
			[]string{"/servers/demo/command: holds the control character U+001B at byte 6"}},
		{"newline in an env value", `{"servers":{"demo":{"command":"x","env":{"A":"line\nline"}}}}`,
			[]string{"/servers/demo/env/A: holds the control character U+000A at byte 4"}},
		{"DEL in cwd, tab in an argument", `{"servers":{"demo":{"command":"x","cwd":"/srv\u007f","args":["a\tb"]}}}`,
			[]string{"/servers/demo/args/0: holds the control character U+0009", "/servers/demo/cwd: holds the control character U+007F"}},
		{"control character in a jail value", `{"servers":{"demo":{"command":"/x","jail":{"name":"mcp0","root_path":"/r\u0000"}}}}`,
			[]string{"/servers/demo/jail/root_path: holds the control character U+0000"}},
		{"timeout past 24 hours", `{"servers":{"demo":{"command":"x","timeout_ms":86400001}}}`,
			[]string{"/servers/demo/timeout_ms: maximum"}},
		{"timeout past int64", `{"servers":{"demo":{"command":"x","call_timeout_ms":99999999999999999999}}}`,
			[]string{"/servers/demo/call_timeout_ms: maximum"}},
		{"idle timeout that would wrap", `{"servers":{"demo":{"command":"x","lifecycle":"persistent","idle_timeout_ms":9223372036854775807}}}`,
			[]string{"/servers/demo/idle_timeout_ms: maximum"}},
		{"idle without persistent", `{"servers":{"demo":{"command":"x","idle_timeout_ms":5}}}`,
			[]string{"/servers/demo/idle_timeout_ms: idle_timeout_ms applies only with"}},
		{"tool_prefix with a dot", `{"servers":{"demo":{"command":"x","tool_prefix":"my.demo"}}}`,
			[]string{"/servers/demo/tool_prefix: 'my.demo' does not match pattern '^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$'"}},
		{"tool_prefix too long", `{"servers":{"demo":{"command":"x","tool_prefix":"` + strings.Repeat("p", 33) + `"}}}`,
			[]string{"/servers/demo/tool_prefix: '" + strings.Repeat("p", 33) + "' does not match pattern"}},
		{"tool_prefix another server's name", `{"servers":{"demo":{"command":"x"},"two":{"command":"y","tool_prefix":"demo"}}}`,
			[]string{`/servers/two/tool_prefix: "demo" is also the tool prefix of server demo`}},
		{"one tool_prefix twice", `{"servers":{"a":{"command":"x","tool_prefix":"p"},"b":{"command":"y","tool_prefix":"p"}}}`,
			[]string{`/servers/a/tool_prefix: "p" is also the tool prefix of server b`, `/servers/b/tool_prefix: "p" is also the tool prefix of server a`}},
		{"two problems", `{"servers":{"a":{"command":1},"b":{"command":"x","args":"y"}}}`,
			[]string{"/servers/a/command: got number, want string", "/servers/b/args: got string, want array"}},
		{"syntax error", "{\"servers\": {\n  \"demo\": {\"command\": \"x\",}\n}}",
			[]string{"line 2, column 27: invalid JSON"}},
		{"empty file", ``, []string{"invalid JSON: the file ends too early"}},
		{"not an object", `[]`, []string{"/: got array, want object"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.Parse(strings.NewReader(tc.doc), "/etc/colibri/external-mcp.json")
			var re *registry.Error
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want a *registry.Error", err)
			}
			msg := err.Error()
			// The file once, first; then each problem at its location.
			if !strings.HasPrefix(msg, "/etc/colibri/external-mcp.json: ") || strings.Count(msg, "external-mcp.json") != 1 {
				t.Errorf("error %q should name the file once, first", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error\n  %s\ndoes not say\n  %s", msg, w)
				}
			}
			if len(re.Problems) != len(tc.want) {
				t.Errorf("%d problems (%v), want %d", len(re.Problems), re.Problems, len(tc.want))
			}
		})
	}
}

func TestParseGood(t *testing.T) {
	doc := `{
	  "servers": {
	    "demo": {
	      "command": "./bin/demo", "args": ["--stdio"], "env": {"A": "x"}, "cwd": "data",
	      "timeout_ms": 1500, "description": "d"
	    },
	    "warm": {"command": "node", "lifecycle": "persistent", "idle_timeout_ms": 1000, "call_timeout_ms": 9000},
	    "jailed": {"command": "/usr/local/bin/srv", "jail": {"name": "mcp0", "root_path": "/jails/mcp0", "user": "mcp"}},
	    "eph": {"command": "/srv", "jail": {"path": "/jails/eph", "ip4": "10.0.0.5"}},
	    "jailcwd": {"command": "srv", "cwd": "/srv/data", "timeout_ms": 86400000, "jail": {"name": "mcp0"}},
	    "prefixed.srv": {"command": "srv", "tool_prefix": "p-1_x"}
	  }
	}`
	reg, err := registry.Parse(strings.NewReader(doc), "/etc/colibri/external-mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(reg.Names(), ","); got != "demo,eph,jailcwd,jailed,prefixed.srv,warm" {
		t.Errorf("names = %s", got)
	}
	demo := reg.Servers["demo"]
	if demo.Command != "/etc/colibri/bin/demo" || demo.Cwd != "/etc/colibri/data" {
		t.Errorf("relative paths resolve against the registry's folder: command %q cwd %q", demo.Command, demo.Cwd)
	}
	if demo.Timeout(time.Minute) != 1500*time.Millisecond || demo.CallTimeoutOr(time.Minute) != 1500*time.Millisecond {
		t.Errorf("call_timeout_ms defaults to timeout_ms")
	}
	warm := reg.Servers["warm"]
	if warm.Command != "node" || !warm.IsPersistent() || warm.IdleTimeout() != time.Second || warm.Timeout(7*time.Second) != 7*time.Second || warm.CallTimeoutOr(0) != 9*time.Second {
		t.Errorf("warm = %+v", warm)
	}
	if demo.IdleTimeout() != registry.DefaultIdleTimeout {
		t.Errorf("default idle timeout")
	}
	if j := reg.Servers["jailed"].Jail; j.Name != "mcp0" || j.User != "mcp" || j.RootPath != "/jails/mcp0" {
		t.Errorf("jail = %+v", j)
	}
	// cwd with jail.name is a path inside the jail (jexec -d): kept as written.
	if jc := reg.Servers["jailcwd"]; jc.Cwd != "/srv/data" || jc.Command != "srv" || jc.Timeout(0) != 24*time.Hour {
		t.Errorf("jailcwd = %+v", jc)
	}
	// The aggregate prefix: tool_prefix, else the server name.
	if p, d := reg.Servers["prefixed.srv"].Prefix(), demo.Prefix(); p != "p-1_x" || d != "demo" {
		t.Errorf("prefixes %q and %q, want p-1_x and demo", p, d)
	}
}

// A control character's message never repeats the value: it may be a secret.
func TestControlCharacterErrorHidesTheValue(t *testing.T) {
	_, err := registry.Parse(strings.NewReader(`{"servers":{"demo":{"command":"x","env":{"TOKEN":"s3cret\u0000"}}}}`), "r.json")
	if err == nil || !strings.Contains(err.Error(), "/servers/demo/env/TOKEN: holds the control character U+0000 at byte 6") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows the value: %v", err)
	}
}

// Millisecond values never wrap around into tiny or negative durations, in
// a registry built in code (which the schema never saw) included.
func TestMillisSaturate(t *testing.T) {
	for _, ms := range []int64{registry.MaxMillis + 1, 1 << 53, math.MaxInt64} {
		s := &registry.Server{TimeoutMS: ms, CallTimeout: ms, IdleMS: ms}
		if s.Timeout(time.Second) != 24*time.Hour || s.CallTimeoutOr(time.Second) != 24*time.Hour || s.IdleTimeout() != 24*time.Hour {
			t.Errorf("%d ms: timeouts %v %v %v, want 24h each", ms, s.Timeout(time.Second), s.CallTimeoutOr(time.Second), s.IdleTimeout())
		}
	}
	if registry.Millis(1500) != 1500*time.Millisecond {
		t.Error("Millis(1500)")
	}
}

// The duplicate-key pass is linear: a registry of half the largest size allowed,
// made of one object with ~150,000 members (some repeated), costs about four
// times the CPU of one a quarter its size, where a pass that compared each
// name with the ones before it would cost sixteen times as much (and take
// minutes). CPU time, and a ratio, so that a loaded machine cannot fail it.
func TestDuplicateKeysScale(t *testing.T) {
	judge := func(size int) (members int, cpu time.Duration) {
		var b strings.Builder
		b.WriteString(`{"servers":{"demo":{"command":"x","env":{`)
		n := 0
		for b.Len() < size {
			if n > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"K%d":"v"`, n%(1<<30))
			n++
		}
		b.WriteString(`,"K1":"again","K2":"again"}}}}`)
		runtime.GC()
		start := cpuTime(t)
		_, err := registry.Parse(strings.NewReader(b.String()), "r.json")
		cpu = cpuTime(t) - start
		var re *registry.Error
		if !errors.As(err, &re) || len(re.Problems) != 2 || re.Problems[0].Location != "/servers/demo/env/K1" {
			t.Fatalf("err = %v, want the two duplicates", err)
		}
		return n, cpu
	}
	small, smallCPU := judge(registry.MaxFileSize / 8)
	large, largeCPU := judge(registry.MaxFileSize / 2)
	t.Logf("%d members: %v of CPU; %d members: %v", small, smallCPU, large, largeCPU)
	if ratio := float64(largeCPU) / float64(max(smallCPU, time.Millisecond)); ratio > 8 {
		t.Errorf("4× the members cost %.1f× the CPU: not linear", ratio)
	}
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cret", "EMPTY": ""}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	srv := &registry.Server{Name: "demo", Env: map[string]string{
		"A": "${TOKEN}", "B": "pre-${TOKEN}-post", "C": "$$HOME", "D": "${EMPTY}", "E": "plain",
	}}
	got, err := srv.ExpandEnv(getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "s3cret", "B": "pre-s3cret-post", "C": "$HOME", "D": "", "E": "plain"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	srv.Env = map[string]string{"API_KEY": "${MISSING}"}
	_, err = srv.ExpandEnv(getenv)
	var mv *registry.MissingVarError
	if !errors.As(err, &mv) || mv.Name != "MISSING" || !strings.Contains(err.Error(), "API_KEY") {
		t.Errorf("err = %v, want a MissingVarError naming MISSING and the key API_KEY", err)
	}
}

func TestLoadExample(t *testing.T) {
	reg, err := registry.Load("../examples/external-mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	demo, ok := reg.Servers["demo"]
	if !ok {
		t.Fatal("the example registry has no demo server")
	}
	abs, _ := filepath.Abs("../bin/demo-mcp-server")
	if demo.Command != abs {
		t.Errorf("demo command = %s, want %s", demo.Command, abs)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := registry.Load("/nonexistent/external-mcp.json")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/external-mcp.json: the registry file does not exist") {
		t.Errorf("err = %v", err)
	}
}

func TestSchemaShippedInDocs(t *testing.T) {
	docs, err := os.ReadFile("../docs/registry.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs, registry.Schema) {
		t.Error("docs/registry.schema.json differs from the embedded schema: cp registry/registry.schema.json docs/")
	}
}

func TestLoaderSeesEdits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	os.WriteFile(path, []byte(`{"servers":{"a":{"command":"x"}}}`), 0o644)
	l := &registry.Loader{Path: path}
	reg, err := l.Load()
	if err != nil || len(reg.Servers) != 1 {
		t.Fatal(reg, err)
	}
	os.WriteFile(path, []byte(`{"servers":{"a":{"command":"x"},"b":{"command":"y"}}}`), 0o644)
	reg, err = l.Load()
	if err != nil || len(reg.Servers) != 2 {
		t.Fatalf("edit not seen: %v %v", reg, err)
	}
	os.WriteFile(path, []byte(`{"servers":`), 0o644)
	if _, err := l.Load(); err == nil {
		t.Fatal("a broken edit was not reported")
	}
}

// A registry built in code is held to the same rules as a parsed one.
func TestValidateBuiltInCode(t *testing.T) {
	reg := &registry.Registry{Servers: map[string]*registry.Server{
		"ok":    {Name: "ok", Command: "/bin/srv"},
		"-bad":  {Name: "-bad", Command: "/bin/srv"},
		"nocmd": {Name: "nocmd"},
		"both":  {Name: "both", Command: "/srv", Jail: &registry.Jail{Name: "a", Path: "/b"}},
		"warm":  {Name: "warm", Command: "/srv", Lifecycle: "warm"},
	}}
	reg.Servers["nul"] = &registry.Server{Name: "nul", Command: "/srv", Args: []string{"a\x00"}}
	reg.Servers["long"] = &registry.Server{Name: "long", Command: "/srv", TimeoutMS: math.MaxInt64, CallTimeout: -1}
	reg.Servers["pfx"] = &registry.Server{Name: "pfx", Command: "/srv", ToolPrefix: "a.b"}
	err := reg.Validate()
	for _, want := range []string{`/servers/-bad: the name "-bad" is not allowed`, "/servers/nocmd/command: is required",
		`/servers/both/jail: "name" and "path" exclude each other`, `/servers/warm/lifecycle: "warm"`,
		"/servers/nul/args/0: holds the control character U+0000", "/servers/long/timeout_ms: 9223372036854775807 is out of range",
		"/servers/long/call_timeout_ms: -1 is out of range", `/servers/pfx/tool_prefix: "a.b" is not allowed`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %s", err, want)
		}
	}
	delete(reg.Servers, "-bad")
	delete(reg.Servers, "nocmd")
	delete(reg.Servers, "both")
	delete(reg.Servers, "warm")
	delete(reg.Servers, "nul")
	delete(reg.Servers, "long")
	delete(reg.Servers, "pfx")
	if err := reg.Validate(); err != nil {
		t.Errorf("a valid registry: %v", err)
	}
}

// A policy, top-level and per server, reaches the Go types, and the rules
// that apply to a server are both.
func TestParsePolicy(t *testing.T) {
	doc := `{
	  "policy": {"deny_destructive": true, "callers": {"ci-bot": {"tools": {"allow": ["search"]}}}},
	  "servers": {
	    "demo": {"command": "/x", "policy": {"tools": {"allow": ["get_*", "search"], "deny": ["*delete*"]}, "deny_open_world": true}},
	    "plain": {"command": "/y"}
	  }
	}`
	reg, err := registry.Parse(strings.NewReader(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	r := reg.Rules(reg.Servers["demo"])
	if r.Global == nil || !r.Global.DenyDestructive || r.Global.Callers["ci-bot"].Tools.Allow[0] != "search" {
		t.Errorf("top-level policy: %+v", r.Global)
	}
	if r.Server != "demo" || r.Local == nil || !r.Local.DenyOpenWorld || r.Local.Tools.Deny[0] != "*delete*" {
		t.Errorf("server policy: %+v", r.Local)
	}
	if p := reg.Rules(reg.Servers["plain"]); p.Local != nil || p.Global != r.Global {
		t.Errorf("a server without a policy: %+v", p)
	}
	// The policy is no part of the entry's own JSON, which fingerprints a
	// warm process: editing it must not restart one.
	b, _ := json.Marshal(reg.Servers["demo"])
	if strings.Contains(string(b), "policy") || strings.Contains(string(b), "delete") {
		t.Errorf("the entry's JSON holds its policy: %s", b)
	}
}

// ProcessKey tells an edit that changes the server from one that changes
// only how colibri shows it.
func TestProcessKey(t *testing.T) {
	base := func() *registry.Server {
		return &registry.Server{Name: "s", Command: "/bin/x", Args: []string{"a"}, Env: map[string]string{"K": "v"}}
	}
	shown := base()
	shown.Description, shown.ToolPrefix = "described", "p"
	if base().ProcessKey() != shown.ProcessKey() {
		t.Error("a description or tool_prefix changed the process key")
	}
	for name, edit := range map[string]func(*registry.Server){
		"args": func(s *registry.Server) { s.Args = []string{"b"} },
		"env":  func(s *registry.Server) { s.Env["K"] = "w" },
		"name": func(s *registry.Server) { s.Name = "t" },
		"cwd":  func(s *registry.Server) { s.Cwd = "/tmp" },
	} {
		s := base()
		edit(s)
		if s.ProcessKey() == base().ProcessKey() {
			t.Errorf("an edit of %s kept the process key", name)
		}
	}
}

// Bad member names in each of the four objects whose names the schema
// restricts are reported at their own locations, every time: jsonschema/v6
// reports them at a location that later siblings may overwrite, so the
// registry checks them itself (names.go).
func TestNamesAtTheirOwnLocations(t *testing.T) {
	doc := `{"policy":{"callers":{"bad caller":{}},"tools":{"allow":["*"]}},
	"servers":{"-bad":{"command":"x"},
	"demo":{"command":"x","args":["a"],"cwd":"/","env":{"1X":"v","OK":"v"},"description":"d","policy":{"callers":{"token:ABC":{}},"tools":{"deny":["x"]}}},
	"web":{"url":"https://example.com/mcp","headers":{"Bad Header":"v","X-Ok":"v"},"description":"d","timeout_ms":5}}}`
	want := []string{
		`/policy/callers/bad caller: the name "bad caller" is not allowed`,
		`/servers/-bad: the name "-bad" is not allowed`,
		`/servers/demo/env/1X: the name "1X" is not allowed`,
		`/servers/demo/policy/callers/token:ABC: the name "token:ABC" is not allowed`,
		`/servers/web/headers/Bad Header: the name "Bad Header" is not allowed`,
	}
	for range 50 { // map order varies from run to run, and so did the location
		_, err := registry.Parse(strings.NewReader(doc), "r.json")
		var re *registry.Error
		if !errors.As(err, &re) {
			t.Fatalf("err = %v, want a registry error", err)
		}
		var got []string
		for _, p := range re.Problems {
			if strings.Contains(p.Message, "is not allowed") {
				got = append(got, p.String())
			}
		}
		if len(got) != len(want) {
			t.Fatalf("name problems:\n%s\nwant %d:\n%s", strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Fatalf("problem %d is\n  %s\nwant\n  %s…", i, got[i], want[i])
			}
		}
	}
}
