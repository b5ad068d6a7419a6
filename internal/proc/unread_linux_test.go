package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// A server that read part of what was written and exited leaves the rest
// unread, and says so: a partial read is never taken for none.
func TestUnreadCountsWhatTheServerLeft(t *testing.T) {
	p := startSh(t, `head -c 3 >/dev/null; exit 3`, nil, Options{})
	if _, err := p.Stdin().Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	if n, ok := p.Unread(); !ok || n != 7 {
		t.Fatalf("Unread = %d, %v; want 7, true", n, ok)
	}
}

// The leader exits, but a process it started holds its stdin (a launcher's
// real server; fd 3 here, as Python's subprocess and Node's inherited stdio
// keep fd 0) and would read it later, past any wait for the last reader
// to go. What Unread says is unread must stay so: the rest of the group is
// killed before it is counted, and all of it is.
func TestUnreadKillsTheGroupThatCouldReadOn(t *testing.T) {
	dir := t.TempDir()
	out, pidf := filepath.Join(dir, "read"), filepath.Join(dir, "pid")
	p := startSh(t, `exec 3<&0
(sh -c 'echo $PPID' >"$PIDF"; while kill -0 $$ 2>/dev/null; do sleep 0.01; done; sleep 5; head -c 5 <&3 >"$OUT") &
while [ ! -s "$PIDF" ]; do sleep 0.01; done
exit 3`, []string{"OUT=" + out, "PIDF=" + pidf}, Options{})
	if _, err := p.Stdin().Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	n, ok := p.Unread()
	waitGone(t, readPid(t, pidf))
	read, _ := os.ReadFile(out)
	if !ok || n != 5 || len(read) != 0 {
		t.Fatalf("Unread = %d, %v, and the descendant read %q: want 5, true, its group killed before it could read", n, ok, read)
	}
}

// A process that left the group (setsid) and holds the server's stdin may
// read it at any time: what is unread is not known.
func TestUnreadUnknownWhileAProcessOutOfTheGroupHoldsStdin(t *testing.T) {
	pidf := filepath.Join(t.TempDir(), "pid")
	p := startSh(t, `exec 3<&0
setsid sh -c 'echo $$ >"$PIDF"; exec sleep 300' <&3 &
while [ ! -s "$PIDF" ]; do sleep 0.01; done
exit 3`, []string{"PIDF=" + pidf}, Options{})
	if _, err := p.Stdin().Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	pid := readPid(t, pidf)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if n, ok := p.Unread(); ok {
		t.Fatalf("Unread = %d, true while process %d holds the pipe; want unknown", n, pid)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); proctable.Alive(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not end", pid)
		}
	}
}

// A write under way may have put bytes in the pipe that are not counted
// yet: Sent is not settled until it ends, and then counts what the pipe
// took; with no reader left it ends at once.
func TestSentSettlesOnceTheWriteUnderWayEnds(t *testing.T) {
	p := startSh(t, `exec sleep 300`, nil, Options{}) // never reads its stdin
	wrote := make(chan int, 1)
	go func() {
		n, _ := p.Stdin().Write(make([]byte, 1<<20)) // more than a pipe holds
		wrote <- n
	}()
	for deadline := time.Now().Add(time.Minute); p.writing.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the write did not start")
		}
	}
	if n, settled := p.Sent(t.Context(), 0); settled {
		t.Fatalf("Sent = %d, settled, while a write is under way", n)
	}
	p.Kill()
	waitDone(t, p)
	n, settled := p.Sent(t.Context(), time.Minute)
	if accepted := <-wrote; !settled || n != int64(accepted) {
		t.Fatalf("Sent = %d, %v; want %d (what the pipe took), settled", n, settled, accepted)
	}
	if unread, ok := p.Unread(); !ok || unread != n {
		t.Fatalf("Unread = %d, %v; want %d, true: the server read nothing", unread, ok, n)
	}
}
