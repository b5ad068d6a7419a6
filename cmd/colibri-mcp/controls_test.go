package main

// Production controls end to end: the policy, the audit log, metrics and
// request ids (docs/operations.md: policy, audit log, metrics and request ids).

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fields of docs/operations.md#audit-log, and no others.
var auditFields = []string{"ts", "id", "principal", "transport", "client", "server", "tool", "exposed_name", "policy",
	"args", "outcome", "error_kind", "phase", "http_status", "attempts", "duration_ms", "result_bytes", "instance", "chain", "prev"}

func str(v any) string { s, _ := v.(string); return s }

// writeRaw writes a registry document as it is.
func writeRaw(t *testing.T, doc map[string]any) string {
	t.Helper()
	b, _ := json.MarshalIndent(doc, "", "  ")
	path := filepath.Join(t.TempDir(), "external-mcp.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// The command line is a caller too, the principal "stdio": the policy hides
// and refuses for it as for a session, and a denied call starts nothing.
func TestCLIPolicy(t *testing.T) {
	pids := t.TempDir()
	reg := writeRaw(t, map[string]any{
		"policy": map[string]any{"callers": map[string]any{"stdio": map[string]any{"tools": map[string]any{"deny": []string{"search"}}}}},
		"servers": map[string]any{"ann": map[string]any{
			"command": fakeBin, "args": []string{"annotated"}, "env": map[string]any{"FAKEMCP_PIDS": pids},
			"policy": map[string]any{"tools": map[string]any{"deny": []string{"delete_*"}}},
		}},
	})
	code, stdout, stderr := runCLI(t, nil, "--external-config", reg, "--external-call", "call", "ann", "delete_file")
	if code != 2 || stdout != "" || stderr != "colibri-mcp: denied: policy denies delete_file on ann for this caller\n" {
		t.Errorf("a denied call: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if started := dirEntries(t, pids); len(started) != 0 {
		t.Errorf("a denied call started %d processes", len(started))
	}
	code, stdout, stderr = runCLI(t, nil, "--external-config", reg, "list-tools", "ann")
	if code != 0 || !strings.Contains(stdout, "ann: 2 tools") || strings.Contains(stdout, "delete_file") || strings.Contains(stdout, "search") {
		t.Errorf("list-tools: exit %d\n%s%s", code, stdout, stderr)
	}
}

var metricsURLRE = regexp.MustCompile(`url=(http://\S+/metrics)`)

// controlledHTTP is colibri serving HTTP with its whole log captured.
type controlledHTTP struct {
	cmd        *exec.Cmd
	url        string // /mcp
	metricsURL string
	logs       *lockedWriter
}

func startControlled(t *testing.T, reg string, args ...string) *controlledHTTP {
	t.Helper()
	args = append([]string{"serve", "--http", "127.0.0.1:0", "--external-config", reg, "--external-call",
		"--log-level", "debug", "--metrics-addr", "127.0.0.1:0"}, args...)
	cmd := exec.Command(colibriBin, args...)
	cmd.Env = append(os.Environ(), pinEnv(t), "E2E_SECRET=x")
	c := &controlledHTTP{cmd: cmd, logs: &lockedWriter{w: &strings.Builder{}}}
	cmd.Stderr = c.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	testwait.Eventually(t, "colibri to listen", func() bool {
		logs := c.logs.String()
		if m := urlRE.FindStringSubmatch(logs); m != nil {
			c.url = m[1]
		}
		if m := metricsURLRE.FindStringSubmatch(logs); m != nil {
			c.metricsURL = m[1]
		}
		return c.url != "" && c.metricsURL != ""
	})
	return c
}

func (c *controlledHTTP) scrape(t *testing.T, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.metricsURL, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func auditLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("an audit line that is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

func listed(t *testing.T, cs *mcp.ClientSession, server string) []string {
	t.Helper()
	res := call(t, cs, "colibri_external_mcp_list_tools", map[string]any{"server": server})
	var out struct {
		Servers []struct {
			Tools []struct{ Name string }
		}
	}
	b, _ := json.Marshal(res.StructuredContent)
	if res.IsError || json.Unmarshal(b, &out) != nil || len(out.Servers) != 1 {
		t.Fatalf("list_tools %s: %s", server, b)
	}
	var names []string
	for _, tl := range out.Servers[0].Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// Production controls over HTTP, with two named tokens and the real
// server-everything: the policy hides and refuses per caller with no
// process started; the audit log holds one line per call, never the
// argument the test sent, with an id that colibri's log lines of that
// request carry; SIGHUP reopens it; /metrics counts exactly the calls made,
// denials included, and no label names a principal or an argument.
func TestHTTPProductionControls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// server-everything behind a wrapper that records each start.
	starts := filepath.Join(dir, "starts")
	wrapper := filepath.Join(dir, "everything.sh")
	os.WriteFile(wrapper, []byte("#!/bin/sh\necho $$ >> \"$STARTS\"\nexec node \"$@\"\n"), 0o755)
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("alice tok-alice-1234\nci-bot tok-ci-5678\n"), 0o600)
	key := filepath.Join(dir, "audit.key")
	os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef\n"), 0o600)
	auditLog := filepath.Join(dir, "audit.log")
	reg := writeRaw(t, map[string]any{
		"policy": map[string]any{"callers": map[string]any{"ci-bot": map[string]any{"tools": map[string]any{"allow": []string{"echo"}}}}},
		"servers": map[string]any{"everything": map[string]any{
			"command": wrapper, "args": []string{everythingPath(t), "stdio"}, "env": map[string]any{"STARTS": starts},
			"policy": map[string]any{"tools": map[string]any{"deny": []string{"toggle-*"}}, "deny_open_world": true},
		}},
	})
	c := startControlled(t, reg, "--token-file", tokens, "--audit-log", auditLog, "--audit-key-file", key)
	started := func() int {
		b, _ := os.ReadFile(starts)
		return strings.Count(string(b), "\n")
	}
	alice, err := connectHTTP(t, c.url, "tok-alice-1234")
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	bot, err := connectHTTP(t, c.url, "tok-ci-5678")
	if err != nil {
		t.Fatal(err)
	}
	defer bot.Close()

	// Hidden, per caller.
	got := strings.Join(listed(t, alice, "everything"), ",")
	if strings.Contains(got, "toggle-") || strings.Contains(got, "gzip-file-as-resource") || !strings.Contains(got, "get-sum") {
		t.Errorf("alice sees %s", got)
	}
	if got := strings.Join(listed(t, bot, "everything"), ","); got != "echo" {
		t.Errorf("ci-bot sees %s", got)
	}

	// Refused with nothing started: by name, by the caller's rules, by annotations.
	const secret = "e2e-distinctive-arg-91c4"
	before := started()
	for _, d := range []struct {
		cs   *mcp.ClientSession
		tool string
	}{{alice, "toggle-simulated-logging"}, {bot, "get-sum"}, {alice, "gzip-file-as-resource"}} {
		res := call(t, d.cs, "colibri_external_mcp_call_tool", map[string]any{"server": "everything", "name": d.tool, "arguments": map[string]any{"x": secret}})
		kind, msg := colibriError(t, res)
		if kind != "denied" || msg != "policy denies "+d.tool+" on everything for this caller" {
			t.Errorf("%s: %s: %s", d.tool, kind, msg)
		}
	}
	if n := started() - before; n != 0 {
		t.Errorf("denied calls started %d processes", n)
	}
	// Allowed calls.
	for _, d := range []struct {
		cs   *mcp.ClientSession
		tool string
		args map[string]any
	}{{alice, "echo", map[string]any{"message": secret}}, {bot, "echo", map[string]any{"message": secret}}, {alice, "get-sum", map[string]any{"a": 1, "b": 2}}} {
		if res := call(t, d.cs, "colibri_external_mcp_call_tool", map[string]any{"server": "everything", "name": d.tool, "arguments": d.args}); res.IsError {
			t.Errorf("%s: %s", d.tool, textOf(res))
		}
	}

	lines := auditLines(t, auditLog)
	type want struct{ principal, tool, outcome, decision string }
	wants := []want{
		{"alice", "toggle-simulated-logging", "denied", "deny"},
		{"ci-bot", "get-sum", "denied", "deny"},
		{"alice", "gzip-file-as-resource", "denied", "deny"},
		{"alice", "echo", "ok", "allow"},
		{"ci-bot", "echo", "ok", "allow"},
		{"alice", "get-sum", "ok", "allow"},
	}
	if len(lines) != len(wants) {
		t.Fatalf("%d audit lines, want %d:\n%v", len(lines), len(wants), lines)
	}
	// colibri's stderr is read apart from the audit file: wait for the last
	// call's line before reading what it logged.
	testwait.Eventually(t, "colibri's log of the last call", func() bool {
		return strings.Contains(c.logs.String(), "request_id="+str(lines[len(lines)-1]["id"]))
	})
	logs := c.logs.String()
	for i, l := range lines {
		w := wants[i]
		policy, _ := l["policy"].(map[string]any)
		if l["principal"] != w.principal || l["tool"] != w.tool || l["outcome"] != w.outcome || policy["decision"] != w.decision ||
			l["server"] != "everything" || l["transport"] != "http" {
			t.Errorf("line %d: %v, want %+v", i, l, w)
		}
		if cl, _ := l["client"].(map[string]any); cl["name"] != "e2e-http" {
			t.Errorf("line %d: client %v", i, l["client"])
		}
		if args, _ := l["args"].(map[string]any); !strings.HasPrefix(str(args["digest"]), "hmac-sha256:") {
			t.Errorf("line %d: args %v", i, l["args"])
		}
		for k := range l {
			if !slices.Contains(auditFields, k) {
				t.Errorf("line %d: field %q is not in docs/operations.md#audit-log", i, k)
			}
		}
		id := str(l["id"])
		if id == "" || !strings.Contains(logs, "request_id="+id) {
			t.Errorf("line %d: no log line carries its id %q", i, id)
		}
	}
	// A per-request process is a request's own: its lines carry the id.
	if id := str(lines[3]["id"]); !regexp.MustCompile(`msg=started server=everything pid=\d+ request_id=` + id).MatchString(logs) {
		t.Errorf("the process started for request %s does not log with its id", id)
	}
	if p, _ := lines[1]["policy"].(map[string]any); p["rule"] != "callers.ci-bot tools.allow" {
		t.Errorf("the rule that denied ci-bot: %v", p["rule"])
	}
	b, _ := os.ReadFile(auditLog)
	if strings.Contains(string(b), secret) || strings.Contains(string(b), "tok-") {
		t.Errorf("the audit log holds an argument value or a token:\n%s", b)
	}
	if st, _ := os.Stat(auditLog); st.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode %04o", st.Mode().Perm())
	}

	// SIGHUP reopens it: after a rename, the next line goes to a new file.
	if err := os.Rename(auditLog, auditLog+".0"); err != nil {
		t.Fatal(err)
	}
	c.cmd.Process.Signal(syscall.SIGHUP)
	testwait.Eventually(t, "the audit log reopened", func() bool { return strings.Contains(c.logs.String(), "SIGHUP: audit log reopened") })
	call(t, alice, "colibri_external_mcp_call_tool", map[string]any{"server": "everything", "name": "echo", "arguments": map[string]any{"message": "after"}})
	if fresh, old := auditLines(t, auditLog), auditLines(t, auditLog+".0"); len(fresh) != 1 || len(old) != len(wants) || fresh[0]["tool"] != "echo" {
		t.Errorf("after SIGHUP: %d lines in the new file, %d in the rotated one", len(fresh), len(old))
	}
	// The chain runs on across the rotation: verify passes the two files
	// in the order written, and fails them in the other.
	verify := func(files ...string) (int, string) {
		out, err := exec.Command(colibriBin, append([]string{"audit", "verify", "--audit-key-file", key}, files...)...).CombinedOutput()
		code := 0
		if err != nil {
			code = -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
		}
		return code, string(out)
	}
	if code, out := verify(auditLog+".0", auditLog); code != 0 || !strings.Contains(out, fmt.Sprintf("%d audit lines, chain whole (1 chain)", len(wants)+1)) {
		t.Errorf("verify across the rotation: exit %d %s", code, out)
	}
	if code, out := verify(auditLog, auditLog+".0"); code != 1 || !strings.Contains(out, "the chain breaks") {
		t.Errorf("verify of the rotated files out of order: exit %d %s", code, out)
	}

	// /metrics: the same bearer tokens; exactly the calls made.
	if code, _ := c.scrape(t, ""); code != http.StatusUnauthorized {
		t.Errorf("a scrape without a token: %d, want 401", code)
	}
	code, scrape := c.scrape(t, "tok-ci-5678")
	if code != 200 {
		t.Fatalf("scrape: %d", code)
	}
	for _, series := range []string{
		`colibri_tool_calls_total{error_kind="",outcome="ok",server="everything",tool="echo"} 3`,
		`colibri_tool_calls_total{error_kind="",outcome="ok",server="everything",tool="get-sum"} 1`,
		`colibri_tool_calls_total{error_kind="denied",outcome="denied",server="everything",tool="get-sum"} 1`,
		`colibri_tool_calls_total{error_kind="denied",outcome="denied",server="everything",tool="toggle-simulated-logging"} 1`,
		`colibri_tool_calls_total{error_kind="denied",outcome="denied",server="everything",tool="gzip-file-as-resource"} 1`,
		`colibri_policy_denials_total{server="everything"} 3`,
		`mcp_client_operation_duration_seconds_count{error_type="",mcp_method_name="tools/call",server="everything"} 4`,
		`colibri_upstream_up{server="everything"} 1`,
		`colibri_audit_write_errors_total 0`,
	} {
		if !strings.Contains(scrape, series+"\n") {
			t.Errorf("the scrape lacks %s", series)
		}
	}
	calls := 0
	for _, line := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(line, "colibri_tool_calls_total{") {
			n, _ := strconv.Atoi(line[strings.LastIndex(line, " ")+1:])
			calls += n
		}
	}
	if calls != 7 {
		t.Errorf("colibri_tool_calls_total sums to %d, want the 7 calls made", calls)
	}
	for _, word := range []string{"alice", "ci-bot", secret, "tok-", "e2e-http"} {
		if strings.Contains(scrape, word) {
			t.Errorf("the scrape holds %q", word)
		}
	}
}

// The command line's call is audited as a session's is (principal and
// transport cli); an audit log that cannot be opened stops it before
// anything runs (exit 2), and one without a key says at start that its
// digests are plain SHA-256.
func TestCLIAudit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pids := t.TempDir()
	reg := writeRegistry(t, registryDoc{"fake": fakeServer("ok", pids)})
	auditLog := filepath.Join(dir, "audit.log")
	code, stdout, stderr := runCLI(t, []string{"COLIBRI_MCP_AUDIT_LOG=" + auditLog}, "--external-config", reg, "--external-call",
		"call", "fake", "echo", "--args", `{"message":"cli-secret-value"}`)
	if code != 0 || stdout != "Echo: cli-secret-value\n" {
		t.Fatalf("call: exit %d: %s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "plain SHA-256") {
		t.Errorf("no warning about unkeyed digests: %q", stderr)
	}
	lines := auditLines(t, auditLog)
	if len(lines) != 1 || lines[0]["principal"] != "stdio" || lines[0]["transport"] != "stdio" || lines[0]["outcome"] != "ok" ||
		!strings.HasPrefix(str(lines[0]["args"].(map[string]any)["digest"]), "sha256:") {
		t.Errorf("audit: %v", lines)
	}
	b, _ := os.ReadFile(auditLog)
	if strings.Contains(string(b), "cli-secret-value") {
		t.Errorf("the audit log holds the argument: %s", b)
	}

	before := len(dirEntries(t, pids))
	code, _, stderr = runCLI(t, nil, "--external-config", reg, "--external-call", "--audit-log", filepath.Join(dir, "missing", "audit.log"),
		"call", "fake", "echo", "--args", `{"message":"x"}`)
	if code != 2 || !strings.Contains(stderr, "opening the audit log") {
		t.Errorf("an audit log that cannot be opened: exit %d: %s", code, stderr)
	}
	if after := len(dirEntries(t, pids)); after != before {
		t.Error("the call ran without its audit log")
	}
	key := filepath.Join(dir, "key")
	os.WriteFile(key, []byte("k3y\n"), 0o644)
	code, _, stderr = runCLI(t, nil, "--external-config", reg, "--external-call", "--audit-log", auditLog, "--audit-key-file", key,
		"call", "fake", "echo", "--args", `{"message":"x"}`)
	if code != 0 || !strings.Contains(stderr, "readable by group or others") || strings.Contains(stderr, "k3y") {
		t.Errorf("a world-readable key: exit %d: %s", code, stderr)
	}
	if lines := auditLines(t, auditLog); len(lines) != 2 || !strings.HasPrefix(str(lines[1]["args"].(map[string]any)["digest"]), "hmac-sha256:") {
		t.Errorf("keyed line: %v", lines)
	}
	// A non-loopback metrics address without a token file is refused at start.
	cmd := exec.Command(colibriBin, "serve", "--metrics-addr", "0.0.0.0:0", "--external-config", reg)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "without a token file") {
		t.Errorf("metrics beyond loopback without tokens: exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
}

// mkfifo makes a FIFO at dir/name (no writer ever opens it).
func mkfifo(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	return p
}

// endsPromptly runs colibri with args and wants it to end within limit
// with says on stderr; one that does not is sent SIGTERM, which must end it.
func endsPromptly(t *testing.T, limit time.Duration, says string, args ...string) {
	t.Helper()
	cmd := exec.Command(colibriBin, args...)
	cmd.Env = append(os.Environ(), "E2E_SECRET=x")
	var stderr lockedWriter
	stderr.w = &strings.Builder{}
	cmd.Stderr, cmd.Stdout = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-exited:
		if !strings.Contains(stderr.String(), says) {
			t.Errorf("%v: output %q, want %q", args, stderr.String(), says)
		}
	case <-time.After(limit):
		t.Errorf("%v: still running after %v", args, limit)
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			t.Errorf("%v: SIGTERM did not end it", args)
		}
	}
}

// A FIFO at any path an operator names is refused at once with a message,
// never waited on: --token-file, --audit-log, --audit-key-file, and an OAuth
// token_file read by auth status, list-tools and call (which hung forever,
// deaf to SIGTERM).
func TestHostileFIFOOperatorPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := mkfifo(t, dir, "fifo")
	reg := writeRegistry(t, registryDoc{"remote": {"url": "http://127.0.0.1:1/mcp",
		"oauth": map[string]any{"grant": "authorization_code", "client_id": "c", "token_file": fifo}}})
	const limit = 5 * time.Second // the binary's start (-race) included; the open itself is at once
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"serve", "--http", "127.0.0.1:0", "--token-file", fifo}, "FIFO"},
		{[]string{"serve", "--audit-log", fifo}, "FIFO"},
		{[]string{"serve", "--audit-log", filepath.Join(dir, "audit.log"), "--audit-key-file", fifo}, "FIFO"},
		{[]string{"auth", "status", "remote"}, "FIFO"},
		{[]string{"list-tools", "remote"}, "unauthorized: "},
		{[]string{"list-tools", "remote"}, "FIFO"},
		{[]string{"call", "--external-call", "remote", "x"}, "unauthorized: "},
		{[]string{"call", "--external-call", "remote", "x"}, "FIFO"},
	} {
		endsPromptly(t, limit, tc.says, append([]string{"--external-config", reg}, tc.args...)...)
	}
}
