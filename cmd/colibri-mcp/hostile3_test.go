package main

// Hostile round three, at the binary: FIFOs at operator paths.

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/procs"
)

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

// A FIFO put at the --token-file path after the start makes that SIGHUP's
// reload fail with a message, and a later SIGHUP still reloads: the signal
// loop never waits in open(2) (it used to, and every later SIGHUP was lost).
func TestHostileFIFOTokenFileSIGHUP(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("first-token-abc\n"), 0o600)
	c := startHTTP(t, "127.0.0.1:0", "--token-file", tokens)
	os.Remove(tokens)
	mkfifo(t, dir, "tokens")
	c.cmd.Process.Signal(syscall.SIGHUP)
	for deadline := time.After(5 * time.Second); ; {
		select {
		case line := <-c.logs:
			if !strings.Contains(line, `msg="SIGHUP`) {
				continue
			}
			if !strings.Contains(line, "failed") || !strings.Contains(line, "FIFO") {
				t.Errorf("SIGHUP with a FIFO: %s", line)
			}
		case <-deadline:
			t.Fatal("SIGHUP with a FIFO at the token file logged nothing")
		}
		break
	}
	if code := post(t, c.url, map[string]string{"Authorization": "Bearer first-token-abc"}); code == http.StatusUnauthorized {
		t.Errorf("the tokens in force were dropped: %d", code)
	}
	os.Remove(tokens)
	os.WriteFile(tokens, []byte("second-token-def\n"), 0o600)
	c.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(5 * time.Second)
	for post(t, c.url, map[string]string{"Authorization": "Bearer second-token-def"}) == http.StatusUnauthorized {
		if time.Now().After(deadline) {
			t.Fatal("a SIGHUP after the FIFO did not reload the token file")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Over HTTP too, an 8 MB server name gives an answer under 64 KiB (it was
// 40 MB, and a few such requests at once exhausted a small host).
func TestHostileHTTPEchoClipped(t *testing.T) {
	c := startHTTP(t, "127.0.0.1:0")
	cs, err := connectHTTP(t, c.url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
		Arguments: map[string]any{"server": strings.Repeat("s", 8<<20), "name": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if !res.IsError || len(b) > 64<<10 {
		t.Errorf("isError %v, an answer of %d bytes", res.IsError, len(b))
	}
}

// An editor's file with a key twice in one object is refused by import, as
// the registry refuses one: it used to take the last silently, while some
// editors keep the first.
func TestHostileImportDuplicateKeys(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mcp.json")
	os.WriteFile(file, []byte(`{"mcpServers": {"a": {"command": "/bin/true"}, "a": {"command": "/bin/false"}}}`), 0o644)
	code, stdout, stderr := runHere(t, nil, "--external-config", filepath.Join(dir, "reg.json"), "import", file)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "/mcpServers") || !strings.Contains(stderr, `"a"`) {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 naming the duplicate", code, stdout, stderr)
	}
}

// unprivileged runs cmd as nobody (65534) when the tests run as root: the
// containment a user without privilege gets is what is tested.
func unprivileged(cmd *exec.Cmd) {
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
}

// openDir is a folder every user may enter, holding copies of the built
// colibri and fake binaries (the test build's own folder is root's alone).
func openDir(t *testing.T) (dir, colibri, fake string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hostile-open-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	cp := func(src string) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Base(src))
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	return dir, cp(colibriBin), cp(fakeBin)
}

// A daemon escaped from a per-request server (setsid and a double fork) is
// gone by the time colibri's teardown ends, run without privilege: here,
// when the one-shot list-tools has exited, with no wait (it outlived the
// answer by 1 to 3 s, until a later sweep).
func TestHostileEscapedDaemonUnprivileged(t *testing.T) {
	dir, colibri, fake := openDir(t)
	pids := filepath.Join(dir, "pids")
	os.Mkdir(pids, 0o777)
	os.Chmod(pids, 0o777)
	reg := filepath.Join(dir, "reg.json")
	b, _ := json.Marshal(map[string]any{"servers": map[string]any{
		"d": map[string]any{"command": fake, "args": []string{"double-fork"}, "env": map[string]string{"FAKEMCP_PIDS": pids}}}})
	os.WriteFile(reg, b, 0o644)
	// Served: the answer comes first, teardown after it; teardown ends
	// when the server's own process is gone.
	// The pin file in a folder the unprivileged colibri may write.
	state := filepath.Join(dir, "state")
	os.Mkdir(state, 0o777)
	os.Chmod(state, 0o777)
	cmd := exec.Command(colibri, "serve", "--external-config", reg)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "COLIBRI_MCP_PIN_FILE=" + filepath.Join(state, "pins.json")}
	unprivileged(cmd)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for range 3 {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "colibri_external_mcp_list_tools", Arguments: map[string]any{"server": "d"}})
		if err != nil || res.IsError {
			t.Fatalf("list_tools: %v %v", err, res)
		}
		entries, _ := os.ReadDir(pids)
		if len(entries) != 3 {
			t.Fatalf("the fake recorded %d processes, want 3", len(entries))
		}
		// The server and its escaped daemon are alive after the answer;
		// teardown ends both: the daemon may not outlive the server by
		// more than the teardown's last step (the reap of adopted orphans).
		died := map[int]time.Time{}
		for deadline := time.Now().Add(10 * time.Second); len(died) < len(entries); time.Sleep(time.Millisecond) {
			for _, e := range entries {
				pid, _ := strconv.Atoi(e.Name())
				if _, ok := died[pid]; !ok && !procs.Alive(pid) {
					died[pid] = time.Now()
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("processes outlived their request by 10 s: %d of %d ended", len(died), len(entries))
			}
		}
		var first, last time.Time
		for _, at := range died {
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
		}
		if gap := last.Sub(first); gap > 500*time.Millisecond {
			t.Errorf("a process outlived the rest of its request by %v", gap)
		}
		for _, e := range entries {
			os.Remove(filepath.Join(pids, e.Name()))
		}
	}
}
