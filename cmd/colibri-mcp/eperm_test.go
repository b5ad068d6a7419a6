package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// The uids of the privilege test: colibri runs as nobody, the hosted
// server as another user, so colibri cannot signal it.
const (
	colibriUID = 65534 // nobody
	serverUID  = 65533
)

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(to, mode); err != nil { // WriteFile's mode passes through the umask
		t.Fatal(err)
	}
}

// An unprivileged colibri whose hosted server runs as another user cannot
// signal it (EPERM). Closing stdin is then the only stop: a server that
// leaves on EOF is gone within the bound; one that does not is logged, and
// neither request nor colibri's own exit waits on it past the bound.
func TestUnprivilegedColibriStopsServersByClosingStdin(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING: needs root, to run colibri as nobody and a setuid fake mdo")
	}
	dir, err := os.MkdirTemp("", "colibri-eperm-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	copyFile(t, colibriBin, filepath.Join(dir, "colibri-mcp"), 0o755)
	copyFile(t, fakeBin, filepath.Join(dir, "fake"), 0o755)
	// internal/fakemcp plays mdo(1) under that name: it becomes serverUID.
	copyFile(t, fakeBin, filepath.Join(dir, "mdo"), 0o4755|os.ModeSetuid)
	copyFile(t, filepath.Join(newJailFixture(t).bin, "jexec"), filepath.Join(dir, "jexec"), 0o755)
	// jexec records into $FAKE_JAIL_RECORD: give it a place nobody may write.
	records := filepath.Join(dir, "records")
	os.Mkdir(records, 0o777)
	os.Chmod(records, 0o777)

	entry := func(fake string) map[string]any {
		return map[string]any{"command": filepath.Join(dir, "fake"), "args": []string{fake}, "jail": map[string]any{"name": "mcp0"},
			"env": map[string]any{"PATH": dir + ":/usr/bin:/bin", "FAKE_JAIL_RECORD": filepath.Join(records, "r")}}
	}
	b, _ := json.Marshal(map[string]any{"servers": map[string]any{"polite": entry("polite"), "linger": entry("linger")}})
	reg := filepath.Join(dir, "external-mcp.json")
	os.WriteFile(reg, b, 0o644)

	cmd := exec.Command(filepath.Join(dir, "colibri-mcp"), "serve", "--external-config", reg, "--external-call", "--log-level", "debug")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "COLIBRI_JAIL_PRIV_MODE=mdo", "HOME=/", "COLIBRI_MCP_PIN_FILE=" + filepath.Join(records, "pins.json")} // a folder colibri's user may write
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: colibriUID, Gid: colibriUID}}
	logs := &lockedWriter{w: &strings.Builder{}}
	cmd.Stderr = logs
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "eperm", Version: "1"}, nil).
		Connect(t.Context(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	colibriPid := cmd.Process.Pid

	hostedOf := func() []int { return proctable.Children(colibriPid) }

	// A polite server: colibri closes its stdin, and it leaves.
	res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "polite", "name": "any"})
	if res.IsError || textOf(res) != "polite" {
		t.Fatalf("polite: %v\n%s", res.Content, logs)
	}
	for deadline := time.Now().Add(6 * time.Second); len(hostedOf()) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the polite server (uid %d) outlived its stdin: %v", serverUID, hostedOf())
		}
	}

	// A lingering server: the answer is on time; colibri cannot kill it and
	// says so; the next request is served.
	start := time.Now()
	res = call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "linger", "name": "any"})
	if res.IsError || textOf(res) != "lingering" || time.Since(start) > 5*time.Second {
		t.Fatalf("linger: %v after %s", res.Content, time.Since(start))
	}
	var survivors []int
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "cannot signal the server's process group"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no warning that the server could not be signalled:\n%s", logs)
		}
	}
	survivors = hostedOf()
	t.Cleanup(func() {
		for _, pid := range survivors {
			syscall.Kill(pid, syscall.SIGKILL) // the test is root; colibri was not
		}
	})
	res = call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "polite", "name": "any"})
	if res.IsError {
		t.Fatalf("the next request: %v", res.Content)
	}

	// colibri's own exit is bounded, survivor or not.
	start = time.Now()
	cs.Close()
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("colibri took %s to exit", d)
	}
}

// A hosted server running as colibri's own user cannot read colibri's
// environment (AWS keys and all) from /proc/$PPID/environ: colibri made
// itself non-dumpable. Control: the same fake, child of a plain process of
// that user, can read its parent's, so the test can fail.
func TestHostedServerCannotReadColibrisEnvironment(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING: needs root, to run colibri as an unprivileged user (root reads any process's environment)")
	}
	dir, err := os.MkdirTemp("", "colibri-environ-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	copyFile(t, colibriBin, filepath.Join(dir, "colibri-mcp"), 0o755)
	copyFile(t, fakeBin, filepath.Join(dir, "fake"), 0o755)
	const secret = "AKIA-colibri-test-secret"
	asNobody := func(argv ...string) {
		t.Helper()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/", "AWS_SECRET_ACCESS_KEY=" + secret, "COLIBRI_MCP_PIN_FILE=" + filepath.Join(dir, "pins.json")}
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: colibriUID, Gid: colibriUID}}
		if out, err := cmd.CombinedOutput(); err != nil {
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("%v: %v\n%s", argv, err, out)
			}
		}
	}

	control := filepath.Join(dir, "control")
	asNobody("/bin/sh", "-c", "FAKEMCP_REPORT="+control+" "+filepath.Join(dir, "fake")+" peek-parent </dev/null; true")
	if b, _ := os.ReadFile(control); !strings.Contains(string(b), secret) {
		t.Fatalf("control: the fake could not read a plain parent's environment (%q): the test proves nothing here", b)
	}

	hosted := filepath.Join(dir, "hosted")
	b, _ := json.Marshal(map[string]any{"servers": map[string]any{"peek": map[string]any{
		"command": filepath.Join(dir, "fake"), "args": []string{"peek-parent"}, "env": map[string]any{"FAKEMCP_REPORT": hosted}}}})
	reg := filepath.Join(dir, "external-mcp.json")
	os.WriteFile(reg, b, 0o644)
	asNobody(filepath.Join(dir, "colibri-mcp"), "--external-config", reg, "list-tools", "peek")
	got, err := os.ReadFile(hosted)
	if err != nil {
		t.Fatalf("the hosted fake reported nothing: %v", err)
	}
	if strings.Contains(string(got), secret) || !strings.HasPrefix(string(got), "error: ") {
		t.Errorf("a hosted server read colibri's environment: %q", got)
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

// A daemon escaped from a hosted server is gone within a second of its
// server's teardown, with colibri run without privilege and (when the
// tests run as root) as root: the classic daemon, whose middle process
// called setsid(2), forked and exited, so that it leads neither a session
// nor a group (kill(-pid) is ESRCH: docs/security.md), and the same after
// setpgid(2). Three requests in a row: each is served at once (an orphan
// that teardown cannot end used to hold every start for 16 s). colibri's
// own exit ends the daemon of a warm server as well. This fails if
// teardown signals an orphan's group without the orphan itself.
func TestHostileEscapedDaemonUnprivileged(t *testing.T) {
	users := []string{"unprivileged"}
	if os.Geteuid() == 0 {
		users = append(users, "root")
	}
	for _, user := range users {
		t.Run(user, func(t *testing.T) { escapedDaemons(t, user == "unprivileged") })
	}
}

func escapedDaemons(t *testing.T, asNobody bool) {
	dir, colibri, fake := openDir(t)
	shared := func(name string) string {
		p := filepath.Join(dir, name)
		os.Mkdir(p, 0o777)
		os.Chmod(p, 0o777) // a folder the unprivileged colibri and fakes may write
		return p
	}
	pids, reports, state := shared("pids"), shared("reports"), shared("state")
	entry := func(shape, lifecycle string) map[string]any {
		e := map[string]any{"command": fake, "args": []string{"daemon"}, "env": map[string]string{
			"FAKEMCP_PIDS": pids, "FAKEMCP_DAEMON": shape, "FAKEMCP_REPORT": filepath.Join(reports, shape+"-"+lifecycle)}}
		if lifecycle != "" {
			e["lifecycle"] = lifecycle
		}
		return e
	}
	reg := filepath.Join(dir, "reg.json")
	b, _ := json.Marshal(map[string]any{"servers": map[string]any{
		"classic": entry("setsid", ""), "pgid": entry("setpgid", ""), "warm": entry("setsid", "persistent")}})
	os.WriteFile(reg, b, 0o644)
	cmd := exec.Command(colibri, "serve", "--external-config", reg)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "COLIBRI_MCP_PIN_FILE=" + filepath.Join(state, "pins.json")}
	if asNobody {
		unprivileged(cmd)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var all []int
	t.Cleanup(func() {
		for _, pid := range all {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// started calls list_tools on server and returns its process and its
	// daemon (the last the fake reported: colibri may also have started
	// the entry in the background, to read its list).
	started := func(server, report string) (serverPid, daemon int) {
		t.Helper()
		start := time.Now()
		res := call(t, cs, "colibri_external_mcp_list_tools", map[string]any{"server": server})
		if res.IsError {
			t.Fatalf("list_tools %s: %v", server, res.Content)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("list_tools %s took %v", server, d)
		}
		b, err := os.ReadFile(filepath.Join(reports, report))
		if err != nil {
			t.Fatalf("the fake reported no daemon: %v", err)
		}
		var middle int
		if _, err := fmt.Sscanf(string(b), "%d %d %d", &serverPid, &middle, &daemon); err != nil {
			t.Fatalf("report %q: %v", b, err)
		}
		entries, _ := os.ReadDir(pids)
		for _, e := range entries {
			pid, _ := strconv.Atoi(e.Name())
			all = append(all, pid)
			os.Remove(filepath.Join(pids, e.Name()))
		}
		return serverPid, daemon
	}
	goneAt := func(pid int) time.Time {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); proctable.Alive(pid); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d is alive 20 s on", pid)
			}
		}
		return time.Now()
	}
	for round := range 3 {
		for _, tc := range []struct{ server, report string }{{"classic", "setsid-"}, {"pgid", "setpgid-"}} {
			server, daemon := started(tc.server, tc.report)
			serverGone, daemonGone := goneAt(server), goneAt(daemon)
			if gap := daemonGone.Sub(serverGone); gap > time.Second {
				t.Errorf("round %d, %s: the daemon outlived its server by %v", round, tc.server, gap)
			}
		}
	}
	// A warm server's daemon is ended by colibri's own exit.
	_, daemon := started("warm", "setsid-persistent")
	if !proctable.Alive(daemon) {
		t.Fatal("the warm server's daemon is gone before colibri exits: the test proves nothing")
	}
	cs.Close()
	exited := time.Now()
	if gap := goneAt(daemon).Sub(exited); gap > time.Second {
		t.Errorf("the warm server's daemon outlived colibri's exit by %v", gap)
	}
}
