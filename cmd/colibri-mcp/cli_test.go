package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// runCLI runs the built binary with args and extra environment, and returns
// its exit code, stdout and stderr.
func runCLI(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(colibriBin, args...)
	cmd.Env = append(os.Environ(), pinEnv(t), "E2E_SECRET=x")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// Settings of docs/registry.md#settings: a bad value is a configuration error
// (exit 2) that names the flag and its variable.
func TestCLISettingsErrors(t *testing.T) {
	t.Parallel() // a long test of its own process: it runs beside the others (docs/testing.md)
	reg := writeRegistry(t, nil)
	for _, tc := range []struct {
		env  []string
		args []string
		says string
	}{
		{[]string{"COLIBRI_MCP_TIMEOUT=0"}, nil, "COLIBRI_MCP_TIMEOUT"},
		{[]string{"COLIBRI_MCP_TIMEOUT=-5"}, nil, "COLIBRI_MCP_TIMEOUT"},
		{[]string{"COLIBRI_MCP_TIMEOUT=soon"}, nil, "COLIBRI_MCP_TIMEOUT"},
		{nil, []string{"--timeout", "0s"}, "--timeout"},
		{[]string{"COLIBRI_MCP_RETRY_BACKOFF=x"}, nil, "COLIBRI_MCP_RETRY_BACKOFF"},
		{[]string{"COLIBRI_MCP_MAX_PROCS=0"}, nil, "COLIBRI_MCP_MAX_PROCS"},
		{[]string{"COLIBRI_MCP_MAX_RESULT_BYTES=lots"}, nil, "COLIBRI_MCP_MAX_RESULT_BYTES"},
		{[]string{"COLIBRI_MCP_RETRIES=-1"}, nil, "COLIBRI_MCP_RETRIES"},
		{[]string{"COLIBRI_MCP_LOG_LEVEL=loud"}, nil, "COLIBRI_MCP_LOG_LEVEL"},
		{[]string{"COLIBRI_MCP_LOG_FORMAT=xml"}, nil, "COLIBRI_MCP_LOG_FORMAT"},
		{[]string{"COLIBRI_JAIL_PRIV_MODE=sudo"}, nil, "COLIBRI_JAIL_PRIV_MODE"},
		{[]string{"COLIBRI_MCP_AGGREGATE=on"}, nil, "COLIBRI_MCP_AGGREGATE=on"},
		{nil, []string{"--no-such-flag"}, "no-such-flag"},
	} {
		args := append([]string{"--external-config", reg}, tc.args...)
		args = append(args, "servers")
		code, _, stderr := runCLI(t, tc.env, args...)
		if code != 2 || !strings.Contains(stderr, tc.says) {
			t.Errorf("%v %v: exit %d, stderr %q; want exit 2 naming %s", tc.env, tc.args, code, stderr, tc.says)
		}
	}
	// A duration is integer milliseconds or a Go duration.
	for _, v := range []string{"1500", "45s", "2m"} {
		if code, _, stderr := runCLI(t, []string{"COLIBRI_MCP_TIMEOUT=" + v}, "--external-config", reg, "servers"); code != 0 {
			t.Errorf("COLIBRI_MCP_TIMEOUT=%s refused: %s", v, stderr)
		}
	}
}

// The call gate is on for 1, true or yes, off for 0, false, no or empty
// (anything else is refused: TestCLIUsageErrors); the flag wins over the
// variable.
func TestCLICallGate(t *testing.T) {
	t.Parallel() // a long test of its own process: it runs beside the others (docs/testing.md)
	reg := writeRegistry(t, nil)
	for _, tc := range []struct {
		env  string
		args []string
		on   bool
	}{
		{"COLIBRI_MCP_EXTERNAL_CALL=1", nil, true},
		{"COLIBRI_MCP_EXTERNAL_CALL=true", nil, true},
		{"COLIBRI_MCP_EXTERNAL_CALL=yes", nil, true},
		{"COLIBRI_MCP_EXTERNAL_CALL=0", nil, false},
		{"COLIBRI_MCP_EXTERNAL_CALL=false", nil, false},
		{"COLIBRI_MCP_EXTERNAL_CALL=no", nil, false},
		{"COLIBRI_MCP_EXTERNAL_CALL=", nil, false},
		{"COLIBRI_MCP_EXTERNAL_CALL=0", []string{"--external-call"}, true},
		{"COLIBRI_MCP_EXTERNAL_CALL=1", []string{"--external-call=false"}, false},
	} {
		args := append([]string{"--external-config", reg}, tc.args...)
		code, out, _ := runCLI(t, []string{tc.env}, append(args, "servers", "--json")...)
		var res struct {
			ExternalCall bool `json:"external_call"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
			t.Fatalf("%s %v: exit %d: %s", tc.env, tc.args, code, out)
		}
		if res.ExternalCall != tc.on {
			t.Errorf("%s %v: gate %v, want %v", tc.env, tc.args, res.ExternalCall, tc.on)
		}
	}
}

// Exit codes: 0 success, 1 the operation ran and failed, 2 usage or
// configuration; --json prints exactly the tool's structuredContent.
func TestCLIExitCodesAndJSON(t *testing.T) {
	t.Parallel()
	reg := writeRegistry(t, nil)
	bad := writeRegistry(t, registryDoc{"x": {"command": "/bin/true", "argz": []string{}}})
	call := func(args ...string) []string {
		return append([]string{"--external-config", reg, "--external-call", "call"}, args...)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		kind string // the colibri_error kind printed by --json
	}{
		{"call ok", call("demo", "echo", "--args", `{"message":"x"}`), 0, ""},
		{"hosted isError", call("demo", "fail", "--json"), 1, ""},
		{"unknown server", call("nope", "echo", "--json"), 1, "unknown_server"},
		{"unknown tool", call("demo", "nope", "--json"), 1, "unknown_tool"},
		{"invalid arguments", call("demo", "add", "--args", `{"a":"x"}`, "--json"), 1, "invalid_arguments"},
		{"unreachable server", []string{"--external-config", reg, "list-tools", "broken", "--json"}, 1, "spawn"},
		{"gate off", []string{"--external-config", reg, "call", "demo", "echo", "--json"}, 2, "call_disabled"},
		{"invalid registry", []string{"--external-config", bad, "servers", "--json"}, 2, "config"},
		{"check finds problems", []string{"--external-config", reg, "check"}, 1, ""},
		{"check of a bad registry", []string{"--external-config", bad, "check"}, 2, ""},
		{"bad --args", call("demo", "echo", "--args", "{"), 2, ""},
		{"too many arguments", []string{"--external-config", reg, "list-tools", "a", "b"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runCLI(t, nil, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, stderr)
			}
			if tc.kind != "" {
				var res struct {
					E struct {
						Kind string `json:"kind"`
					} `json:"colibri_error"`
				}
				json.Unmarshal([]byte(out), &res)
				if res.E.Kind != tc.kind {
					t.Errorf("--json printed %s, want colibri_error kind %s", out, tc.kind)
				}
			}
		})
	}
}

// call --json prints the hosted tool's structuredContent: the same JSON a
// client of the MCP tool finds there.
func TestCLICallJSONIsStructuredContent(t *testing.T) {
	t.Parallel()
	reg := writeRegistry(t, nil)
	code, out, stderr := runCLI(t, nil, "--external-config", reg, "--external-call", "call", "demo", "add", "--args", `{"a":2,"b":40}`, "--json")
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got["sum"] != 42.0 || len(got) != 1 {
		t.Errorf("exit %d: %q (%s), want {\"sum\": 42}", code, out, stderr)
	}
	code, out, _ = runCLI(t, nil, "--external-config", reg, "--external-call", "call", "demo", "echo", "--args", `{"message":"x"}`, "--json")
	if code != 0 || strings.TrimSpace(out) != "null" {
		t.Errorf("a text-only result: exit %d: %q, want null", code, out)
	}
}

func TestCLIVersion(t *testing.T) {
	code, out, _ := runCLI(t, nil, "--version")
	if code != 0 || !strings.HasPrefix(out, "colibri-mcp ") || !strings.Contains(out, runtime.Version()) || !strings.Contains(out, "commit") {
		t.Errorf("--version: exit %d: %q", code, out)
	}
}
