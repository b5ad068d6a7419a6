package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// gateEnv names a file the "gated" fake waits for before it serves: the
// test decides when that server answers, without sleeping.
const gateEnv = "FAKEMCP_GATE"

// writeOnly writes a registry of exactly servers (writeRegistry adds demo
// and broken).
func writeOnly(t *testing.T, servers registryDoc) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"servers": servers})
	path := filepath.Join(t.TempDir(), "external-mcp.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func fakeEntry(name string, env map[string]any, extra map[string]any) map[string]any {
	entry := fakeServer(name, "")
	if env != nil {
		entry["env"] = env
	}
	for k, v := range extra {
		entry[k] = v
	}
	return entry
}

// check --probe prints each server's line as it finishes, the stderr tail
// under a failure, and a summary; a server that exits with an error status
// during initialize is not tried again (docs/registry.md#error-kinds).
func TestCheckProbeStreams(t *testing.T) {
	pids := t.TempDir()
	gate := filepath.Join(t.TempDir(), "open")
	reg := writeOnly(t, registryDoc{
		"ok":    fakeEntry("polite", nil, nil),
		"died":  fakeEntry("exit-early", map[string]any{"FAKEMCP_PIDS": pids}, nil),
		"hang":  fakeEntry("hang-init", nil, map[string]any{"timeout_ms": 300}),
		"gated": fakeEntry("gated", map[string]any{gateEnv: gate}, nil),
	})
	outR, outW := io.Pipe()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	done := make(chan int, 1)
	go func() {
		var stderr strings.Builder
		err := run(t.Context(), []string{"colibri-mcp", "--external-config", reg, "--timeout", "60s", "--retry-backoff", "10ms", "check", "--probe"},
			strings.NewReader(""), outW, &stderr, []string{pinEnv(t)})
		outW.Close()
		done <- exitCode(err, io.Discard)
	}()
	var got []string
	// Each server's line is followed by its confinement (sandbox_test.go
	// checks those); here they are passed over.
	confinement := regexp.MustCompile(`^ {23}(unconfined: |sandboxed: |jail )`)
	next := func(what string) string {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("output ended while waiting for %s; got:\n%s", what, strings.Join(got, "\n"))
				}
				got = append(got, l)
				if confinement.MatchString(l) {
					continue
				}
				return l
			case <-time.After(30 * time.Second):
				t.Fatalf("no line for %s within 30s (is the output streamed?); got:\n%s", what, strings.Join(got, "\n"))
			}
			return ""
		}
	}
	if l := next("the header"); !strings.Contains(l, "valid, 4 servers") {
		t.Fatalf("header %q", l)
	}
	// ok, died (with its tail) and hang answer while gated still waits:
	// their lines must arrive before the gate opens.
	seen := map[string]bool{}
	for !(seen["ok"] && seen["died"] && seen["tail"] && seen["hang"]) {
		l := next("the ok, died and hang lines")
		switch {
		case regexp.MustCompile(`^  ok +ok \(1 tool\)$`).MatchString(l):
			seen["ok"] = true
		case regexp.MustCompile(`^  died +FAIL handshake: .*exited with status 3 during initialize`).MatchString(l):
			seen["died"] = true
		case l == "      | fatal: missing API key":
			if !seen["died"] {
				t.Errorf("the stderr tail came before its server's line:\n%s", strings.Join(got, "\n"))
			}
			seen["tail"] = true
		case regexp.MustCompile(`^  hang +FAIL timeout: `).MatchString(l):
			seen["hang"] = true
		default:
			t.Errorf("unexpected line %q", l)
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if l := next("gated"); !regexp.MustCompile(`^  gated +ok \(1 tool\)$`).MatchString(l) {
		t.Errorf("gated: %q", l)
	}
	if l := next("the summary"); !regexp.MustCompile(`^2 ok, 2 failed in \d+\.\ds$`).MatchString(l) {
		t.Errorf("summary %q, want \"2 ok, 2 failed in N.Ns\"", l)
	}
	if code := <-done; code != exitFailed {
		t.Errorf("exit %d, want %d", code, exitFailed)
	}
	if started, _ := os.ReadDir(pids); len(started) != 1 {
		t.Errorf("the server that exited with status 3 was started %d times; a permanent failure is not retried", len(started))
	}
}

// list-tools of every server shows a failing server's stderr tail too.
func TestListToolsShowsStderrTail(t *testing.T) {
	reg := writeOnly(t, registryDoc{"ok": fakeEntry("polite", nil, nil), "died": fakeEntry("exit-early", nil, nil)})
	code, stdout, _ := runHere(t, nil, "--external-config", reg, "--retry-backoff", "10ms", "list-tools")
	if code != exitFailed || !strings.Contains(stdout, "died: error: handshake") || !strings.Contains(stdout, "      | fatal: missing API key") ||
		!strings.Contains(stdout, "ok: 1 tool\n") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
}

// Did you mean: server names and tool names; the unknown_tool message names
// the tools the server has.
func TestDidYouMeanServersAndTools(t *testing.T) {
	reg := writeRegistry(t, nil)
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{[]string{"list-tools", "dmeo"}, []string{"unknown_server", `did you mean "demo"?`}},
		{[]string{"--external-call", "call", "dmeo", "echo"}, []string{"unknown_server", `did you mean "demo"?`}},
		{[]string{"--external-call", "call", "demo", "ecko"}, []string{"unknown_tool", `did you mean "echo"?`, "its tools: ", "add", "fail"}},
		{[]string{"describe", "demo", "ecko"}, []string{"unknown_tool", `did you mean "echo"?`}},
	} {
		code, stdout, stderr := runHere(t, nil, append([]string{"--external-config", reg}, tc.args...)...)
		if code != exitFailed || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q", tc.args, code, stdout)
		}
		for _, s := range tc.says {
			if !strings.Contains(stderr, s) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, stderr, s)
			}
		}
	}
	// The MCP tool says the same, in colibri_error.
	code, stdout, _ := runHere(t, nil, "--external-config", reg, "--external-call", "call", "demo", "ecko", "--json")
	var res struct {
		E struct{ Kind, Message string } `json:"colibri_error"`
	}
	if json.Unmarshal([]byte(stdout), &res); code != exitFailed || res.E.Kind != "unknown_tool" || !strings.Contains(res.E.Message, `did you mean "echo"?`) {
		t.Errorf("exit %d: %s", code, stdout)
	}
}

// describe shows one tool: description, annotations, an argument table.
func TestDescribe(t *testing.T) {
	reg := writeRegistry(t, nil)
	code, stdout, stderr := runHere(t, nil, "--external-config", reg, "describe", "demo", "add")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, s := range []string{"demo / add", "arguments:", "NAME", "TYPE", "REQUIRED", "call demo add --args '{"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("describe lacks %q:\n%s", s, stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^  a +number +yes`).MatchString(stdout) {
		t.Errorf("no row for the argument a:\n%s", stdout)
	}
	code, stdout, _ = runHere(t, nil, "--external-config", reg, "describe", "demo", "add", "--json")
	var res struct {
		Servers []struct {
			Server string
			Tools  []struct{ Name string }
		}
	}
	if json.Unmarshal([]byte(stdout), &res); code != 0 || len(res.Servers) != 1 || len(res.Servers[0].Tools) != 1 || res.Servers[0].Tools[0].Name != "add" {
		t.Errorf("--json: exit %d: %s", code, stdout)
	}
}

// call --args-file PATH|- and --output text|structured|result.
func TestCallArgsFileAndOutput(t *testing.T) {
	reg := writeRegistry(t, nil)
	file := filepath.Join(t.TempDir(), "args.json")
	os.WriteFile(file, []byte(`{"a": 2, "b": 40}`+"\n"), 0o644)
	base := []string{"--external-config", reg, "--external-call", "call", "demo", "add"}
	code, stdout, stderr := runHere(t, nil, append(base, "--args-file", file, "--output", "structured")...)
	if code != 0 || strings.Join(strings.Fields(stdout), "") != `{"sum":42}` {
		t.Errorf("--args-file PATH --output structured: exit %d: %q %s", code, stdout, stderr)
	}
	code, stdout, stderr = runHereIn(t, strings.NewReader(`{"a":1,"b":1}`), nil, append(base, "--args-file", "-", "--output", "result")...)
	var res struct {
		Content           []struct{ Type string }
		StructuredContent map[string]any
	}
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil || len(res.Content) == 0 || res.StructuredContent["sum"] != 2.0 {
		t.Errorf("--args-file - --output result: exit %d: %q %s", code, stdout, stderr)
	}
	code, stdout, _ = runHere(t, nil, append(base, "--args", `{"a":1,"b":2}`)...)
	if code != 0 || !strings.Contains(stdout, "3") {
		t.Errorf("--output text (default): exit %d: %q", code, stdout)
	}
}
