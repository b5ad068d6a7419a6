package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The documented service user has HOME /nonexistent (docs/freebsd.md). A
// colibri of that user (nobody when the tests run as root, as CI does;
// the tests' own user otherwise) with no --state-dir says so where an
// operator looks, not one call at a time: serve warns naming the folder and
// --state-dir, /readyz answers 503 with that reason, check exits 1, a call
// fails config with the same words. With --state-dir, everything works and
// the pins land in that folder.
func TestServiceUserWithoutHome(t *testing.T) {
	t.Parallel()
	dir, colibri, _ := openDir(t)
	demo := filepath.Join(dir, "demo-mcp-server")
	copyFile(t, demoBin, demo, 0o755)
	reg := filepath.Join(dir, "external-mcp.json")
	b, _ := json.Marshal(map[string]any{"servers": map[string]any{"demo": map[string]any{"command": demo}}})
	if err := os.WriteFile(reg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		os.Chown(state, 65534, 65534)
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"} // neither pin file nor state folder
	command := func(extra []string, args ...string) *exec.Cmd {
		cmd := exec.Command(colibri, append([]string{"--external-config", reg, "--external-call"}, args...)...)
		cmd.Env, cmd.Dir = append(slices.Clone(env), extra...), dir
		unprivileged(cmd)
		return cmd
	}
	run := func(extra []string, args ...string) (int, string, string) {
		t.Helper()
		cmd := command(extra, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	const folder = "/nonexistent/.local/state/colibri-mcp"
	names := func(what, text string) {
		t.Helper()
		if !strings.Contains(text, folder) || !strings.Contains(text, "--state-dir") || !strings.Contains(text, "HOME /nonexistent does not exist") {
			t.Errorf("%s does not name the folder, its reason and --state-dir:\n%s", what, text)
		}
	}

	c := startHTTPCmd(t, command(nil, "serve", "--http", "127.0.0.1:0"))
	ready := strings.TrimSuffix(c.url, "/mcp") + "/readyz"
	code, body := getText(t, ready)
	if code != 503 {
		t.Errorf("/readyz: %d %q, want 503", code, body)
	}
	names("/readyz", body)
	waitLog(t, c, "state folder unusable", folder)
	cs, err := connectHTTP(t, c.url, "")
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "demo", "name": "echo", "arguments": map[string]any{"message": "hi"}})
	if !res.IsError || !strings.Contains(textOf(res), "config") {
		t.Errorf("a call over HTTP: %v", textOf(res))
	}
	// Over HTTP a caller never learns colibri's folders: the words are
	// there, the paths are not.
	if text := textOf(res); !strings.Contains(text, "state folder") || !strings.Contains(text, "--state-dir") || strings.Contains(text, "/nonexistent") {
		t.Errorf("a call over HTTP: %s", text)
	}
	cs.Close()

	code, out, stderr := run(nil, "check")
	if code != 1 {
		t.Errorf("check: exit %d, want 1\n%s%s", code, out, stderr)
	}
	names("check", out)
	code, out, stderr = run(nil, "call", "demo", "echo", "--args", `{"message":"hi"}`)
	if code != 2 || !strings.Contains(stderr, "config") {
		t.Errorf("call: exit %d, want 2 (config)\n%s%s", code, out, stderr)
	}
	names("call", stderr)

	withState := []string{"COLIBRI_MCP_STATE_DIR=" + state}
	c = startHTTPCmd(t, command(withState, "serve", "--http", "127.0.0.1:0"))
	ready = strings.TrimSuffix(c.url, "/mcp") + "/readyz"
	if code, body := getText(t, ready); code != 200 {
		t.Errorf("/readyz with --state-dir: %d %q", code, body)
	}
	if code, out, stderr := run(withState, "check"); code != 0 {
		t.Errorf("check with --state-dir: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := run(nil, "--state-dir", state, "call", "demo", "echo", "--args", `{"message":"hi"}`); code != 0 || !strings.Contains(out, "hi") {
		t.Errorf("call with --state-dir: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(state, "pins.json")); err != nil {
		t.Errorf("the pins are not in the state folder: %v", err)
	}
}

// A state folder that is a symbolic link, another user's, or writable by
// others is refused with the fix, for a registry that needs it; a registry
// that needs none (pins off, no sandbox, no OAuth) is served all the same.
func TestStateFolderRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	os.Mkdir(real, 0o700)
	link := filepath.Join(dir, "link")
	os.Symlink(real, link)
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	write := func(doc map[string]any) string {
		b, _ := json.Marshal(doc)
		p := filepath.Join(t.TempDir(), "external-mcp.json")
		os.WriteFile(p, b, 0o644)
		return p
	}
	pinned := write(map[string]any{"servers": map[string]any{"demo": map[string]any{"command": demoBin}}})
	unpinned := write(map[string]any{"pin": "off", "servers": map[string]any{"demo": map[string]any{"command": demoBin}}})
	for _, c := range []struct{ dir, want string }{
		{link, "symbolic link"},
		{open, "chmod 0700 " + open},
		{file, "not a folder"},
		{"relative/state", "not an absolute path"},
	} {
		env := []string{"COLIBRI_MCP_STATE_DIR=" + c.dir, "COLIBRI_MCP_PIN_FILE="}
		code, out, stderr := runCLI(t, env, "--external-config", pinned, "check")
		if code != 1 || !strings.Contains(out, c.want) || !strings.Contains(out, "--state-dir") {
			t.Errorf("%s: check: exit %d, want 1 and %q\n%s%s", c.dir, code, c.want, out, stderr)
		}
		if code, out, stderr := runCLI(t, env, "--external-config", unpinned, "check"); code != 0 {
			t.Errorf("%s: check of a registry that needs no state folder: exit %d\n%s%s", c.dir, code, out, stderr)
		}
	}
}

// waitLog waits for a line of c's log holding every one of words.
func waitLog(t *testing.T, c *httpColibri, words ...string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line := <-c.logs:
			all := true
			for _, w := range words {
				all = all && strings.Contains(line, w)
			}
			if all {
				return
			}
		case <-deadline:
			t.Fatalf("no log line with %q", words)
		}
	}
}
