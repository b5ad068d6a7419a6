package main

// End-to-end tests, as an editor sees colibri-mcp: the built binary, driven
// over stdio by a go-sdk client, hosting the demo server and the real
// server-everything from npm (testdata/peers, installed by `make peers`).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/testbuild"
)

var (
	colibriBin string // the built colibri-mcp, with -race when this test binary has it
	demoBin    string // the built demo server
	fakeBin    string // internal/fakemcp, the fake servers
)

func TestMain(m *testing.M) {
	dir := testbuild.MustDir()
	var err error
	if colibriBin, err = testbuild.Build(dir, "colibri-mcp", testbuild.Module+"/cmd/colibri-mcp", testbuild.Race); err == nil {
		if demoBin, err = testbuild.Build(dir, "demo-mcp-server", testbuild.Module+"/examples/demo-server", false); err == nil {
			fakeBin, err = testbuild.Fake(dir)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	checkPins := testbuild.IsolatePins(dir)
	code := m.Run()
	if err := checkPins(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// pinEnv gives one test's colibri a pin file of its own: tests share server
// names ("demo") whose tools differ from test to test.
func pinEnv(t *testing.T) string {
	return "COLIBRI_MCP_PIN_FILE=" + filepath.Join(t.TempDir(), "pins.json")
}

// fakeServer is a registry entry for the fake server name; with pids, each
// of its processes is recorded in that folder.
func fakeServer(name, pids string) map[string]any {
	entry := map[string]any{"command": fakeBin, "args": []string{name}}
	if pids != "" {
		entry["env"] = map[string]any{"FAKEMCP_PIDS": pids}
	}
	return entry
}

// everythingPath is server-everything's entry point, or "" (and a skip) when
// the peers are not installed; in CI their absence fails the test.
func everythingPath(t *testing.T) string {
	t.Helper()
	p, _ := filepath.Abs("../../testdata/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	_, statErr := os.Stat(p)
	_, nodeErr := exec.LookPath("node")
	if statErr == nil && nodeErr == nil {
		return p
	}
	msg := "server-everything is not installed (run `make peers`; needs node and npm)"
	if os.Getenv("CI") != "" {
		t.Fatalf("%s: in CI this is a failure, not a skip", msg)
	}
	t.Skip("SKIPPING real-peer test: " + msg)
	return ""
}

type registryDoc map[string]map[string]any

// writeRegistry writes a registry with the demo server, server-everything
// (when installed), a broken server and whatever extra holds.
func writeRegistry(t *testing.T, extra registryDoc) string {
	t.Helper()
	servers := registryDoc{
		"demo":   {"command": demoBin, "env": map[string]any{"DEMO_MODE": "1", "DEMO_TOKEN": "${E2E_SECRET}"}},
		"broken": {"command": "/nonexistent/mcp-server"},
	}
	for k, v := range extra {
		servers[k] = v
	}
	b, _ := json.MarshalIndent(map[string]any{"servers": servers}, "", "  ")
	path := filepath.Join(t.TempDir(), "external-mcp.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func everything(t *testing.T) registryDoc {
	return registryDoc{"everything": {"command": "node", "args": []string{everythingPath(t), "stdio"},
		"env": map[string]any{"FROM_REGISTRY": "visible"}}}
}

// connect starts colibri-mcp serve on registry and connects a client to it.
func connect(t *testing.T, registry string, env ...string) *mcp.ClientSession {
	t.Helper()
	cs, _ := connectLogs(t, registry, env...)
	return cs
}

// connectLogs is connect, also returning colibri's log (stderr, at debug).
func connectLogs(t *testing.T, registry string, env ...string) (*mcp.ClientSession, *lockedWriter) {
	t.Helper()
	cmd := exec.Command(colibriBin, "serve", "--external-config", registry, "--timeout", "20s", "--retry-backoff", "10ms")
	cmd.Env = append(os.Environ(), pinEnv(t), "E2E_SECRET=e2e-secret-value", "COLIBRI_MCP_LOG_LEVEL=debug")
	cmd.Env = append(cmd.Env, env...)
	logs := &lockedWriter{w: &strings.Builder{}}
	cmd.Stderr = logs
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting to colibri-mcp: %v\nstderr:\n%s", err, logs)
	}
	t.Cleanup(func() {
		cs.Close()
		if strings.Contains(logs.String(), "e2e-secret-value") {
			t.Errorf("a secret value appeared in colibri's log")
		}
	})
	return cs, logs
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	return callWithin(t, cs, tool, args, 60*time.Second)
}

// callWithin is call with a bound of its own: moving 10 MB through a
// race-built colibri beside other tests on two cores can take a minute.
func callWithin(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, bound time.Duration) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// colibriError returns the kind of a colibri error result, or "".
func colibriError(t *testing.T, res *mcp.CallToolResult) (kind, message string) {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var sc struct {
		E *struct{ Kind, Message string } `json:"colibri_error"`
	}
	json.Unmarshal(b, &sc)
	if sc.E == nil {
		return "", ""
	}
	if !res.IsError {
		t.Errorf("a colibri_error without isError")
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.HasPrefix(text, "colibri: "+sc.E.Kind+": ") {
		t.Errorf("text %q does not begin with colibri: %s: ", text, sc.E.Kind)
	}
	return sc.E.Kind, sc.E.Message
}

func wantColibriError(t *testing.T, res *mcp.CallToolResult, kind string) string {
	t.Helper()
	got, msg := colibriError(t, res)
	if got != kind {
		b, _ := json.Marshal(res)
		t.Fatalf("kind %q, want %q: %s", got, kind, b)
	}
	return msg
}

func TestE2EToolsAreExactlyThree(t *testing.T) {
	cs := connect(t, writeRegistry(t, nil))
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	want := []string{"colibri_external_mcp_call_tool", "colibri_external_mcp_list_tools", "colibri_external_mcp_servers"}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
}

func TestE2EServersShowsEnvNamesOnly(t *testing.T) {
	cs := connect(t, writeRegistry(t, nil))
	res := call(t, cs, "colibri_external_mcp_servers", nil)
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), "e2e-secret-value") || strings.Contains(string(b), "${E2E_SECRET}") {
		t.Fatalf("an env value is shown: %s", b)
	}
	var out struct {
		ExternalCall bool `json:"external_call"`
		Servers      []struct {
			Name    string   `json:"name"`
			EnvKeys []string `json:"env_keys"`
		}
	}
	b, _ = json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	if out.ExternalCall || len(out.Servers) != 2 || out.Servers[1].Name != "demo" ||
		strings.Join(out.Servers[1].EnvKeys, ",") != "DEMO_MODE,DEMO_TOKEN" {
		t.Errorf("servers = %s", b)
	}
	var fromText any
	json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &fromText)
	if !reflect.DeepEqual(fromText, res.StructuredContent) {
		t.Errorf("text content and structuredContent differ:\n%v\n%v", fromText, res.StructuredContent)
	}
}

func TestE2EListTools(t *testing.T) {
	t.Parallel()
	cs := connect(t, writeRegistry(t, everything(t)))

	res := call(t, cs, "colibri_external_mcp_list_tools", map[string]any{"server": "demo"})
	if res.IsError {
		t.Fatalf("list demo: %v", res.Content)
	}
	b, _ := json.Marshal(res.StructuredContent)
	for _, name := range []string{`"echo"`, `"add"`, `"slow"`, `"fail"`, `"inputSchema"`} {
		if !strings.Contains(string(b), name) {
			t.Errorf("demo's list lacks %s: %s", name, b)
		}
	}

	res = call(t, cs, "colibri_external_mcp_list_tools", nil)
	var all struct {
		Servers []struct {
			Server string
			Tools  []struct{ Name string }
			Error  *struct{ Kind string }
		}
	}
	b, _ = json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &all)
	if res.IsError || len(all.Servers) != 3 {
		t.Fatalf("list all: %s", b)
	}
	got := map[string]string{}
	for _, s := range all.Servers {
		if s.Error != nil {
			got[s.Server] = "error:" + s.Error.Kind
		} else {
			got[s.Server] = fmt.Sprint(len(s.Tools) > 0)
		}
	}
	if got["broken"] != "error:spawn" || got["demo"] != "true" || got["everything"] != "true" {
		t.Errorf("list all = %v", got)
	}

	res = call(t, cs, "colibri_external_mcp_list_tools", map[string]any{"server": "broken"})
	wantColibriError(t, res, "spawn")
}

// The hosted result comes back as the server gave it: compared with what a
// direct client of the same server receives.
func TestE2EPassThroughMatchesDirectClient(t *testing.T) {
	t.Parallel() // a long test of its own process: it runs beside the others (docs/testing.md)
	path := everythingPath(t)
	cs := connect(t, writeRegistry(t, everything(t)), "COLIBRI_MCP_EXTERNAL_CALL=1")

	direct := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	dcmd := exec.Command("node", path, "stdio")
	dcs, err := direct.Connect(t.Context(), &mcp.CommandTransport{Command: dcmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer dcs.Close()

	for _, tc := range []struct {
		tool string
		args map[string]any
		want string // a fragment the result must hold
	}{
		{"echo", map[string]any{"message": "hi"}, `"Echo: hi"`},
		{"get-tiny-image", map[string]any{}, `"type":"image"`},
		{"get-structured-content", map[string]any{"location": "Chicago"}, `"structuredContent":{`},
		{"get-resource-links", map[string]any{"count": 2}, `"type":"resource_link"`},
		{"get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 1}, `"type":"resource"`},
		{"get-sum", map[string]any{"a": 2, "b": 40}, `42`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			want, err := dcs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			got := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "everything", "name": tc.tool, "arguments": tc.args})
			wb, _ := json.Marshal(want)
			gb, _ := json.Marshal(got)
			// server-everything stamps some resources with the wall-clock
			// time: the two calls may fall in different seconds.
			wb, gb = clock.ReplaceAll(wb, []byte("TIME")), clock.ReplaceAll(gb, []byte("TIME"))
			if string(gb) != string(wb) {
				t.Errorf("through colibri:\n%s\ndirect:\n%s", gb, wb)
			}
			if !strings.Contains(string(gb), tc.want) {
				t.Errorf("result lacks %s: %s", tc.want, gb)
			}
		})
	}
}

var clock = regexp.MustCompile(`\d{1,2}:\d{2}:\d{2}( [AP]M)?`)

// get-env shows exactly the environment the hosted server received: the
// contract's few variables and the registry's, never colibri's secrets.
func TestE2EChildEnvironment(t *testing.T) {
	t.Parallel()
	everythingPath(t)
	cs := connect(t, writeRegistry(t, everything(t)), "COLIBRI_MCP_EXTERNAL_CALL=1",
		"AWS_SECRET_ACCESS_KEY=do-not-leak", "GITHUB_TOKEN=do-not-leak", "LC_ALL=C.UTF-8")
	res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "everything", "name": "get-env"})
	if res.IsError {
		t.Fatalf("get-env: %v", res.Content)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var env map[string]string
	if err := json.Unmarshal([]byte(text), &env); err != nil {
		t.Fatalf("get-env: %v: %s", err, text)
	}
	if strings.Contains(text, "do-not-leak") || strings.Contains(text, "e2e-secret-value") {
		t.Fatalf("a secret of colibri's environment reached the hosted server: %s", text)
	}
	allowed := map[string]bool{"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "LANG": true, "TZ": true, "TMPDIR": true, "FROM_REGISTRY": true}
	for k := range env {
		if !allowed[k] && !strings.HasPrefix(k, "LC_") {
			t.Errorf("variable %s reached the hosted server", k)
		}
	}
	if env["FROM_REGISTRY"] != "visible" || env["LC_ALL"] != "C.UTF-8" || env["PATH"] == "" {
		t.Errorf("expected variables missing: %v", env)
	}
}

// With the gate off nothing is spawned: a server that would leave a marker
// file never runs.
func TestE2EGateOffSpawnsNothing(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "spawned")
	reg := writeRegistry(t, registryDoc{"marker": {"command": "/bin/sh", "args": []string{"-c", "touch " + marker + "; exec cat"}}})
	cs, logs := connectLogs(t, reg)
	res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "marker", "name": "anything"})
	msg := wantColibriError(t, res, "call_disabled")
	if !strings.Contains(msg, "COLIBRI_MCP_EXTERNAL_CALL=1") || !strings.Contains(msg, "--external-call") {
		t.Errorf("message %q must name both ways to enable calls", msg)
	}
	// colibri logs every process it starts, in order: once the demo server
	// listed next has its line, a start for the refused call would have
	// had one before it.
	if res := call(t, cs, "colibri_external_mcp_list_tools", map[string]any{"server": "demo"}); res.IsError {
		t.Fatalf("listing the demo server: %v", res.Content)
	}
	started := regexp.MustCompile(`msg=started server=(\w+)`)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "msg=started server=demo"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no start logged for the demo server:\n%s", logs)
		}
	}
	for _, m := range started.FindAllStringSubmatch(logs.String(), -1) {
		if m[1] != "demo" {
			t.Errorf("the gate was off, yet server %s was started", m[1])
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the gate was off, yet the server was started")
	}
}

// Each bad input gets its kind, and the next request still works.
func TestE2EBadInputs(t *testing.T) {
	t.Parallel() // a long test of its own process: it runs beside the others (docs/testing.md)
	reg := writeRegistry(t, registryDoc{"flood": fakeServer("ok", "")})
	cs := connect(t, reg, "COLIBRI_MCP_EXTERNAL_CALL=1")
	next := func() {
		t.Helper()
		res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "demo", "name": "echo", "arguments": map[string]any{"message": "still here"}})
		if res.IsError || res.Content[0].(*mcp.TextContent).Text != "Echo: still here" {
			t.Fatalf("the next request failed: %v", res.Content)
		}
	}
	big := strings.Repeat("x", 10<<20)
	for _, tc := range []struct {
		name string
		args map[string]any
		kind string
	}{
		{"unknown server", map[string]any{"server": "nope", "name": "echo"}, "unknown_server"},
		{"unknown tool", map[string]any{"server": "demo", "name": "nope"}, "unknown_tool"},
		{"wrong argument types", map[string]any{"server": "demo", "name": "add", "arguments": map[string]any{"a": "one", "b": 2}}, "invalid_arguments"},
		{"arguments not an object", map[string]any{"server": "demo", "name": "echo", "arguments": []int{1}}, "invalid_arguments"},
		{"missing name", map[string]any{"server": "demo"}, "invalid_arguments"},
		{"100 MB on stdout", map[string]any{"server": "flood", "name": "flood"}, "too_large"},
		{"10 MB argument passes", map[string]any{"server": "demo", "name": "echo", "arguments": map[string]any{"message": big}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The 10 MB row is about passing, not speed (make bench measures that).
			res := callWithin(t, cs, "colibri_external_mcp_call_tool", tc.args, 3*time.Minute)
			if tc.kind == "" {
				if res.IsError || res.Content[0].(*mcp.TextContent).Text != "Echo: "+big {
					t.Errorf("10 MB round trip failed")
				}
			} else {
				wantColibriError(t, res, tc.kind)
			}
			next()
		})
	}

	// A malformed registry: every tool answers config, naming the file and
	// the location; fixing the file fixes the next request, no restart.
	good, _ := os.ReadFile(reg)
	os.WriteFile(reg, []byte(`{"servers":{"demo":{"command":"x","args":[1]}}}`), 0o644)
	res := call(t, cs, "colibri_external_mcp_servers", nil)
	msg := wantColibriError(t, res, "config")
	if !strings.Contains(msg, reg) || !strings.Contains(msg, "/servers/demo/args/0") {
		t.Errorf("config error %q should name the file and /servers/demo/args/0", msg)
	}
	os.WriteFile(reg, good, 0o644)
	next()
}

// Progress from the hosted server reaches the caller under the caller's
// token, in order, every notification before the result.
func TestE2EProgressIsRelayed(t *testing.T) {
	s := start(t, writeRegistry(t, nil), nil)
	p := hostedCall("demo", "slow", map[string]any{"steps": 3, "interval_ms": 20})
	p.SetProgressToken("caller-token")
	res, err := s.cs.CallTool(t.Context(), p)
	if err != nil || res.IsError {
		t.Fatalf("slow: %v %v", err, res)
	}
	want := []string{"progress caller-token 1/3 step 1 of 3", "progress caller-token 2/3 step 2 of 3", "progress caller-token 3/3 step 3 of 3", "response"}
	if got := s.rec.take(); !slices.Equal(got, want) {
		t.Errorf("on the wire = %q, want %q", got, want)
	}
}

// A caller on the SDK's newest protocol (2026-07-28, stateless discovery)
// gets the same service: calls, results and progress.
func TestE2ENewestProtocolCaller(t *testing.T) {
	cmd := exec.Command(colibriBin, "serve", "--external-config", writeRegistry(t, nil), "--external-call")
	cmd.Env = append(os.Environ(), pinEnv(t), "E2E_SECRET=x")
	var mu sync.Mutex
	var progress []float64
	client := mcp.NewClient(&mcp.Implementation{Name: "newest", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, r.Params.Progress)
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil) // no pinned version
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v == "2025-11-25" {
		t.Logf("negotiated %s (the SDK's newest is not newer here)", v)
	}
	p := hostedCall("demo", "slow", map[string]any{"steps": 3, "interval_ms": 10})
	p.SetProgressToken("t")
	res, err := cs.CallTool(t.Context(), p)
	if err != nil || res.IsError || textOf(res) != "done after 3 steps" {
		t.Fatalf("%v %v", err, res)
	}
	// The client library may dispatch notifications after the result.
	got := func() int { mu.Lock(); defer mu.Unlock(); return len(progress) }
	for deadline := time.Now().Add(2 * time.Second); got() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no progress reached a newest-protocol caller")
		}
	}
}
