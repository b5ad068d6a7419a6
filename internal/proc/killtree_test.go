//go:build linux || freebsd

package proc

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid names a process that has not ended. A zombie
// (ended, not yet reaped by whoever is its parent now) has ended.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		// FreeBSD has no /proc by default: signal 0 is all there is.
		return !os.IsNotExist(err) || !procMounted()
	}
	// The state follows the command name's closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
}

func procMounted() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// KillTree ends a live server's whole tree: its process group, and the
// descendants that left it with setsid(2) — one directly (a daemon in a
// session of its own) and one a generation further down, under an
// intermediate that also left the group. Signalling the group alone leaves
// the last two running: this test fails without the descendant walk.
//
// The test process is not a reaper (AcquireReaper is never called here), so
// nothing else cleans up behind KillTree: what it misses stays alive.
func TestKillTreeReachesDescendantsThatLeftTheGroup(t *testing.T) {
	if IsReaper() {
		t.Fatal("this test must run without the reaper")
	}
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skipf("setsid(1) is not installed: %v", err)
	}
	pids := filepath.Join(t.TempDir(), "pids")
	// sh (group leader) ─┬─ setsid sleep          (left the group)
	//                    └─ setsid sh ── sleep     (left the group; its child too)
	script := `
		"$SETSID" sh -c 'echo $$ >> "$PIDS"; exec sleep 300' &
		"$SETSID" sh -c 'sleep 300 & echo $! >> "$PIDS"; wait' &
		echo $$ >> "$PIDS"
		wait`
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "SETSID="+setsid, "PIDS="+pids)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	defer Reaped(cmd.Process)
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()

	var descendants []int
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(pids)
		lines := strings.Fields(string(b))
		if len(lines) == 3 {
			for _, l := range lines {
				p, err := strconv.Atoi(l)
				if err != nil {
					t.Fatalf("pid file: %q", b)
				}
				if p != cmd.Process.Pid {
					descendants = append(descendants, p)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tree did not start: pid file %q", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() {
		for _, p := range descendants {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	for _, p := range descendants {
		pgid, err := syscall.Getpgid(p)
		if err != nil || pgid == cmd.Process.Pid {
			t.Fatalf("descendant %d is in the server's group (%d, %v): the test proves nothing", p, pgid, err)
		}
	}

	n, err := KillTree(cmd.Process.Pid)
	if err != nil {
		t.Fatalf("KillTree: %v", err)
	}
	if n < len(descendants) {
		t.Errorf("KillTree signalled %d descendants, want at least %d", n, len(descendants))
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the server itself was not killed")
	}
	deadline = time.Now().Add(10 * time.Second)
	for _, p := range descendants {
		for alive(p) {
			if time.Now().After(deadline) {
				t.Fatalf("descendant %d outlived KillTree", p)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// A Child's Kill, the host's path for a server it must end now (a failed
// request, a message past the limit, a stop past its grace), ends the tree
// of a live server as KillTree does: the descendants that left its group
// die too. This fails if Kill signals the group alone.
func TestChildKillEndsTheTree(t *testing.T) {
	if IsReaper() {
		t.Fatal("this test must run without the reaper")
	}
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skipf("setsid(1) is not installed: %v", err)
	}
	pids := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command("sh", "-c", `
		"$SETSID" sh -c 'echo $$ >> "$PIDS"; exec sleep 300' &
		"$SETSID" sh -c 'sleep 300 & echo $! >> "$PIDS"; wait' &
		wait`)
	cmd.Env = append(os.Environ(), "SETSID="+setsid, "PIDS="+pids)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	c, err := StartChild(cmd, Options{Server: "tree", MaxMessage: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var descendants []int
	for deadline := time.Now().Add(10 * time.Second); len(descendants) < 2; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pids)
		descendants = descendants[:0]
		for _, l := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(l); err == nil {
				descendants = append(descendants, p)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tree did not start: pid file %q", b)
		}
	}
	t.Cleanup(func() {
		for _, p := range descendants {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	c.Kill()
	if !c.Ended(10 * time.Second) {
		t.Fatal("the server itself was not killed")
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range descendants {
		for alive(p) {
			if time.Now().After(deadline) {
				t.Fatalf("descendant %d outlived Kill", p)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// KillTree ends the group's members that are no descendant of the server:
// an orphan (its parent, a member too, exited, so that the kernel handed it
// to init) is out of reach of the descendant walk, and stopped by KillTree's
// first SIGSTOP; only the last whole-group SIGKILL ends it. This fails if
// that SIGKILL goes to the server alone (TestKillTreeReachesDescendants…
// then still passes): the orphan stays, stopped.
func TestKillTreeEndsTheGroupsOrphans(t *testing.T) {
	if IsReaper() {
		t.Fatal("this test must run without the reaper")
	}
	pids := filepath.Join(t.TempDir(), "pids")
	// sh (group leader, then sleep) ── sh ── sleep   (the middle sh exits: the
	// sleep is orphaned, still in the leader's group)
	cmd := exec.Command("sh", "-c", `
		sh -c 'sleep 300 & echo $! >> "$PIDS"'
		echo $$ >> "$PIDS"
		exec sleep 300`)
	cmd.Env = append(os.Environ(), "PIDS="+pids)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	defer Reaped(cmd.Process)
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	orphan := 0
	for deadline := time.Now().Add(10 * time.Second); orphan == 0; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pids)
		if lines := strings.Fields(string(b)); len(lines) == 2 {
			p, err := strconv.Atoi(lines[0])
			if err != nil {
				t.Fatalf("pid file: %q", b)
			}
			orphan = p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tree did not start: pid file %q", b)
		}
	}
	t.Cleanup(func() { syscall.Kill(orphan, syscall.SIGKILL) })
	if pgid, err := syscall.Getpgid(orphan); err != nil || pgid != cmd.Process.Pid {
		t.Fatalf("the orphan %d is not in the server's group (%d, %v): the test proves nothing", orphan, pgid, err)
	}

	if _, err := KillTree(cmd.Process.Pid); err != nil {
		t.Fatalf("KillTree: %v", err)
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the server itself was not killed")
	}
	for deadline := time.Now().Add(10 * time.Second); alive(orphan); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the group's orphan %d outlived KillTree", orphan)
		}
	}
}
