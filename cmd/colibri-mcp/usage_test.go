package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
)

// runHere runs the command line in-process, as main would, with stdin
// empty and the test's environment plus env: it returns the exit code,
// stdout and stderr.
func runHere(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	return runHereIn(t, strings.NewReader(""), env, args...)
}

func runHereIn(t *testing.T, stdin io.Reader, env []string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	environ := append(os.Environ(), pinEnv(t), "E2E_SECRET=x")
	err := run(ctx, append([]string{"colibri-mcp"}, args...), stdin, &stdout, &stderr, append(environ, env...))
	code := exitCode(err, &stderr)
	return code, stdout.String(), stderr.String()
}

// Typos never serve: every usage error is exit 2, one line on stderr that
// names what was probably meant and the help to read, and nothing on stdout
// (docs/cli.md#mistakes).
func TestCLIUsageErrors(t *testing.T) {
	reg := writeRegistry(t, nil)
	for _, tc := range []struct {
		args []string
		env  []string
		says []string
	}{
		{[]string{"sevrers"}, nil, []string{`unknown command "sevrers"`, `did you mean "servers"?`, "colibri-mcp servers --help"}},
		{[]string{"sevrers", "--json"}, nil, []string{`unknown command "sevrers"`, `"servers"`}},
		{[]string{"--timeout", "5s", "lsit-tools"}, nil, []string{`did you mean "list-tools"?`}},
		{[]string{"frobnicate"}, nil, []string{`unknown command "frobnicate"`, "colibri-mcp --help"}},
		{[]string{"help", "sevrers"}, nil, []string{`did you mean "servers"?`}},
		{[]string{"help", "call", "servers"}, nil, []string{"help takes [COMMAND]", "colibri-mcp help --help"}},
		{[]string{"completion"}, nil, []string{"completion needs a shell: bash, zsh, fish", "colibri-mcp completion --help"}},
		{[]string{"completion", "bsh"}, nil, []string{`unknown shell "bsh"`, `did you mean "bash"?`}},
		{[]string{"--nope"}, nil, []string{"unknown flag --nope", "colibri-mcp --help"}},
		{[]string{"--external-confg", reg, "servers"}, nil, []string{"unknown flag --external-confg", "did you mean --external-config?"}},
		{[]string{"call", "demo", "echo", "--argz", "{}"}, nil, []string{"call: unknown flag --argz", "did you mean --args?", "colibri-mcp call --help"}},
		{[]string{"check", "--prob"}, nil, []string{"check: unknown flag --prob", "did you mean --probe?"}},
		{[]string{"servers", "extra"}, nil, []string{`servers takes no arguments, got "extra"`, "colibri-mcp servers --help"}},
		{[]string{"serve", "extra"}, nil, []string{`serve takes no arguments, got "extra"`}},
		{[]string{"check", "extra"}, nil, []string{`check takes no arguments`}},
		{[]string{"list-tools", "demo", "echo"}, nil, []string{`"echo" is one too many`, "colibri-mcp list-tools --help"}},
		{[]string{"call", "demo"}, nil, []string{"call needs SERVER TOOL, got 1 arguments"}},
		{[]string{"call", "demo", "echo", "x"}, nil, []string{`"x" is one too many`}},
		{[]string{"describe", "demo"}, nil, []string{"describe needs SERVER TOOL"}},
		{[]string{"call", "demo", "echo", "--output", "txt"}, nil, []string{`--output "txt": did you mean "text"?`}},
		{[]string{"call", "demo", "echo", "--json", "--output", "result"}, nil, []string{"--json is --output structured"}},
		{[]string{"call", "demo", "echo", "--args", "{}", "--args-file", "-"}, nil, []string{"give --args or --args-file, not both"}},
		{[]string{"call", "demo", "echo", "--args", "{"}, nil, []string{"--args: not valid JSON"}},
		{[]string{"call", "demo", "echo", "--args-file", "/nonexistent/args.json"}, nil, []string{"--args-file", "no such file"}},
		{[]string{"servers"}, []string{"COLIBRI_MCP_EXTERNAL_CALL=on"}, []string{"COLIBRI_MCP_EXTERNAL_CALL=on", "not understood"}},
		{[]string{"servers"}, []string{"COLIBRI_MCP_EXTERNAL_CALL=enabled"}, []string{"COLIBRI_MCP_EXTERNAL_CALL=enabled"}},
		{[]string{"--external-call=on", "servers"}, nil, []string{"external-call"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"--external-config", reg}, tc.args...)
			code, stdout, stderr := runHere(t, tc.env, args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing (it is the MCP channel of serve)", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "colibri-mcp: ") {
				t.Errorf("stderr %q, want one line", stderr)
			}
			for _, s := range tc.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q lacks %q", stderr, s)
				}
			}
		})
	}
}

// help, --help and completion answer on stdout and exit 0; help shows the
// units of the settings, examples and the exit codes.
func TestCLIHelpAndCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{[]string{"help"}, []string{"COMMANDS:", "describe", "completion", "Exit codes:", "--timeout D", "--max-procs N", "--external-config PATH"}},
		{[]string{"--help"}, []string{"COMMANDS:", "Exit codes:"}},
		{[]string{"help", "call"}, []string{"--args-file PATH", "--output FORMAT", "Examples:", "Exit codes:", "--timeout D"}},
		{[]string{"call", "--help"}, []string{"--args JSON", "Examples:"}},
		{[]string{"help", "check"}, []string{"--probe", "colibri-mcp check --probe"}},
		{[]string{"help", "completion"}, []string{"bash|zsh|fish"}},
		{[]string{"completion", "bash"}, []string{"colibri-mcp", "complete"}},
		{[]string{"completion", "zsh"}, []string{"colibri-mcp"}},
		{[]string{"completion", "fish"}, []string{"colibri-mcp"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runHere(t, nil, tc.args...)
			if code != 0 || stderr != "" {
				t.Errorf("exit %d, stderr %q", code, stderr)
			}
			for _, s := range tc.says {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
		})
	}
	// A command's own flags come before the global ones.
	_, stdout, _ := runHere(t, nil, "help", "call")
	if own, global := strings.Index(stdout, "--args-file"), strings.Index(stdout, "--external-config"); own < 0 || global < own {
		t.Errorf("call's own flags are not listed first:\n%s", stdout)
	}
}

// serveOnce runs colibri-mcp with args as an editor would: one initialize
// on stdin, its answer read from stdout, then stdin closed. It returns what
// was written to stderr.
func serveOnce(t *testing.T, args ...string) string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		err := run(t.Context(), append([]string{"colibri-mcp"}, args...), inR, outW, &stderr, []string{pinEnv(t)})
		outW.Close()
		done <- err
	}()
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || !strings.Contains(line, `"serverInfo":{"name":"colibri-mcp"`) {
		t.Fatalf("stdout %q (%v): want an MCP initialize answer", line, err)
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	select {
	case err := <-done:
		if code := exitCode(err, &stderr); code != 0 {
			t.Errorf("exit %d after stdin closed: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after stdin closed")
	}
	return stderr.String()
}

// No command at all serves MCP over stdio (what editors run).
func TestCLINoCommandServes(t *testing.T) {
	stderr := serveOnce(t, "--external-config", writeRegistry(t, nil))
	if strings.Contains(stderr, "waiting for an MCP client") {
		t.Errorf("stdin is not a terminal, yet serve said %q", stderr)
	}
}

// The SDK's own info lines are debug: at the default level the editor's log
// shows colibri's lines only.
func TestSDKInfoLinesAreDebug(t *testing.T) {
	reg := writeRegistry(t, nil)
	stderr := serveOnce(t, "--external-config", reg)
	if !strings.Contains(stderr, "serving MCP over stdio") {
		t.Errorf("colibri's own line is missing: %q", stderr)
	}
	if strings.Contains(stderr, "server run start") || strings.Contains(stderr, "server session") {
		t.Errorf("the SDK's info lines show at info: %q", stderr)
	}
	stderr = serveOnce(t, "--external-config", reg, "--log-level", "debug")
	if !strings.Contains(stderr, `level=DEBUG msg="server session connected"`) {
		t.Errorf("at debug, the SDK's lines should show, as debug: %q", stderr)
	}
}
