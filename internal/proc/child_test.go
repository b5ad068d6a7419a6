//go:build linux || freebsd

package proc

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/redact"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
)

// startSh starts script under sh as a Child, as launch builds a command:
// the leader of a session of its own. It is killed when the test ends.
func startSh(t *testing.T, script string, env []string, opts Options) *Child {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	opts.Server = "fake"
	p, err := StartChild(cmd, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(0) })
	return p
}

// waitDone waits for p to be reaped, failing the test after a generous
// deadline.
func waitDone(t *testing.T, p *Child) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(time.Minute):
		t.Fatalf("the process %d was not reaped", p.PID())
	}
}

// The moment one message from stdout passes MaxMessage, the whole group is
// killed (a background child of the server included) and the read fails
// with ErrTooLarge; a message within it is read as it is.
func TestMaxMessageKillsTheGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	p := startSh(t, `sleep 300 & echo $! > "$PIDFILE"; printf '%0500d\n' 0; head -c 5000 /dev/zero | tr '\0' a; sleep 300`,
		[]string{"PIDFILE=" + pidfile}, Options{MaxMessage: 1000})
	r := p.Stdout()
	var read []byte
	buf := make([]byte, 512)
	var err error
	for err == nil {
		var n int
		n, err = r.Read(buf)
		read = append(read, buf[:n]...)
	}
	if !errors.Is(err, ErrTooLarge) || !p.Oversize() {
		t.Fatalf("read ended with %v (oversize %v), want ErrTooLarge", err, p.Oversize())
	}
	if want := strings.Repeat("0", 500) + "\n"; !strings.HasPrefix(string(read), want) {
		t.Errorf("the message within the bound was not read whole: %q…", read[:min(len(read), 40)])
	}
	waitDone(t, p)
	if got := p.DescribeEnd(); got != "killed by signal killed" {
		t.Errorf("the server %s, want killed by signal killed", got)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	bg, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(time.Minute)
	for alive(bg) {
		if time.Now().After(deadline) {
			t.Fatalf("the server's background child %d outlived the kill", bg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop first closes the server's stdin: a server that leaves on EOF (as
// the MCP lifecycle asks), saying goodbye on its stdout as it goes, exits
// with its own status 0, and is never signalled.
func TestStopClosesStdinFirst(t *testing.T) {
	p := startSh(t, `trap 'exit 9' TERM; cat >/dev/null; echo goodbye; exit 0`, nil, Options{MaxMessage: 1 << 20})
	p.Stop(30 * time.Second)
	if !p.Ended(0) {
		t.Fatal("Stop returned before the server was reaped")
	}
	if got := p.DescribeEnd(); got != "exited with status 0" || !p.ExitedCleanly() {
		t.Errorf("the server %s, want exited with status 0 (not signalled)", got)
	}
}

// The stderr tail kept for error reports is at most StderrTailBytes, ends
// with the server's last words, and shows no secret of its environment,
// not even one cut across a 4 KiB piece of a long line; nor do the stderr
// lines logged.
func TestStderrTailBoundedAndRedacted(t *testing.T) {
	const secret = "s3cr3t-value"
	var logs syncbuf.Buffer
	p := startSh(t, `
i=0
while [ $i -lt 300 ]; do echo "line $i key=$SECRET" >&2; i=$((i+1)); done
head -c 20000 /dev/zero | tr '\0' b >&2; echo >&2
head -c 4090 /dev/zero | tr '\0' c >&2; echo "$SECRET" >&2
echo "last words key=$SECRET" >&2
exit 3`, []string{"SECRET=" + secret}, Options{MaxMessage: 1 << 20, Secrets: redact.New([]string{secret}),
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	go io.Copy(io.Discard, p.Stdout())
	waitDone(t, p)
	tail := p.Tail()
	if len(tail) > StderrTailBytes {
		t.Errorf("the tail holds %d bytes, want at most %d", len(tail), StderrTailBytes)
	}
	if want := "last words key=" + redact.Redacted; !strings.HasSuffix(tail, want) {
		t.Errorf("the tail ends %q, want %q", tail[max(0, len(tail)-60):], want)
	}
	if !p.EndedWithError() || p.DescribeEnd() != "exited with status 3" {
		t.Errorf("the server %s, want exited with status 3", p.DescribeEnd())
	}
	for what, shown := range map[string]string{"tail": tail, "log": logs.String()} {
		if strings.Contains(shown, "s3cr3t") {
			t.Errorf("the %s shows (part of) the secret", what)
		}
	}
	if !strings.Contains(logs.String(), "line 299 key="+redact.Redacted) {
		t.Errorf("the stderr lines were not logged, redacted")
	}
}
