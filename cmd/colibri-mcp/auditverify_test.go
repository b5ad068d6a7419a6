package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// colibri's audit log is a chain that `audit verify` checks: a serving
// colibri (--instance web1, a key file) writes lines that carry its
// instance and chain; verify passes them with the key, in every form
// newsyslog leaves them (.gz, .bz2, .xz, .zst) and on stdin, refuses
// without the key (exit 2), and fails a changed byte naming the file and
// the two lines (exit 1). Over HTTP the session id begins with the
// instance's name, every log line carries it, and the chain's head is
// logged at exit.
func TestAuditChainAndVerify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	key := filepath.Join(dir, "audit.key")
	os.WriteFile(key, []byte("a key of the test\n"), 0o600)
	reg := writeRegistry(t, nil)
	c := startHTTPWith(t, "127.0.0.1:0", reg, "--instance", "web1", "--audit-log", log, "--audit-key-file", key)
	cs, err := connectHTTP(t, c.url, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cs.ID(), "web1.") {
		t.Errorf("session id %q does not begin with the instance's name", cs.ID())
	}
	for i := range 4 {
		if res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "demo", "name": "echo", "arguments": map[string]any{"message": "m"}}); res.IsError {
			t.Fatalf("call %d: %s", i, textOf(res))
		}
	}
	cs.Close()
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("colibri did not stop")
	}
	var logs strings.Builder
	for len(c.logs) > 0 {
		logs.WriteString(<-c.logs + "\n")
	}
	if !strings.Contains(logs.String(), "audit chain head") || !strings.Contains(logs.String(), "lines=4") {
		t.Errorf("no chain head logged at exit:\n%s", logs.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if !strings.Contains(line, "instance=web1") {
			t.Errorf("a log line without the instance: %s", line)
		}
	}
	lines := auditLines(t, log)
	if len(lines) != 4 || lines[0]["instance"] != "web1" || !strings.HasPrefix(str(lines[0]["chain"]), "web1:") || lines[0]["prev"] != "genesis" {
		t.Fatalf("audit lines: %v", lines)
	}

	verify := func(stdin []byte, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(colibriBin, append([]string{"audit", "verify"}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run()
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}
	plain, _ := os.ReadFile(log)
	forms := []string{log}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	os.WriteFile(log+".0.gz", gz.Bytes(), 0o600)
	forms = append(forms, log+".0.gz")
	for _, tool := range []struct{ name, ext string }{{"bzip2", ".bz2"}, {"xz", ".xz"}, {"zstd", ".zst"}} {
		if _, err := exec.LookPath(tool.name); err != nil {
			continue // verify reads .bz2 itself; .xz and .zst need the tools, which say so
		}
		if out, err := exec.Command(tool.name, "-k", log).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", tool.name, err, out)
		}
		forms = append(forms, log+tool.ext)
	}
	for _, f := range forms {
		if code, out, stderr := verify(nil, "--audit-key-file", key, f); code != 0 || !strings.Contains(out, "4 audit lines, chain whole") {
			t.Errorf("verify %s: exit %d %s%s", filepath.Base(f), code, out, stderr)
		}
	}
	if code, out, stderr := verify(plain, "--audit-key-file", key, "-"); code != 0 || !strings.Contains(out, "4 audit lines") {
		t.Errorf("verify -: exit %d %s%s", code, out, stderr)
	}
	if code, _, stderr := verify(nil, log); code != 2 || !strings.Contains(stderr, "--audit-key-file") {
		t.Errorf("verify without the key: exit %d %s", code, stderr)
	}
	changed := bytes.Replace(plain, []byte(`"principal":"`), []byte(`"principal":"x`), 2) // lines 1 and 2
	tampered := filepath.Join(dir, "tampered.log")
	os.WriteFile(tampered, changed, 0o600)
	if code, _, stderr := verify(nil, "--audit-key-file", key, tampered); code != 1 || !strings.Contains(stderr, tampered+": the chain breaks between lines 1 and 2") {
		t.Errorf("verify of a changed line: exit %d %s", code, stderr)
	}
	// colibri killed mid-write leaves a torn last line (here: the first
	// line cut short): the next colibri to write ends it and records it,
	// and verify names it, the chains whole.
	f, _ := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	f.Write(plain[:bytes.IndexByte(plain, '\n')-30])
	f.Close()
	if code, out, stderr := runCLI(t, nil, "--external-config", reg, "--external-call", "--audit-log", log, "--audit-key-file", key, "call", "demo", "echo", "--args", `{"message":"m"}`); code != 0 {
		t.Fatalf("a call after the torn write: exit %d %s %s", code, out, stderr)
	}
	if code, out, stderr := verify(nil, "--audit-key-file", key, log); code != 0 || !strings.Contains(out, "5 audit lines, chain whole (2 chains)") ||
		!strings.Contains(out, "a torn write at "+log+" line 5 (") || !strings.Contains(out, "ended and recorded by "+log+" line 6") {
		t.Errorf("verify after a torn write: exit %d %s%s", code, out, stderr)
	}
}

// --instance is checked: it begins session ids and chains.
func TestInstanceNameChecked(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLI(t, nil, "--instance", "a b", "servers")
	if code != 2 || !strings.Contains(stderr, "--instance / COLIBRI_MCP_INSTANCE") {
		t.Errorf("--instance 'a b': exit %d %s", code, stderr)
	}
	for _, c := range []struct{ in, want string }{{"web1", "web1"}, {"", ""}} {
		got, err := instanceName(c.in)
		if err != nil || (c.want != "" && got != c.want) || !validInstance(got) {
			t.Errorf("instanceName(%q) = %q, %v", c.in, got, err)
		}
	}
}
