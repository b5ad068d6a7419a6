package stdioserve

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// blockingPipe is a pipe whose read end is in blocking mode, as a parent's
// exec leaves a child's stdin.
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close(); pw.Close() })
	fd, err := unix.Dup(int(pr.Fd())) // Fd puts it in blocking mode
	if err != nil {
		t.Fatal(err)
	}
	r = os.NewFile(uintptr(fd), "stdin")
	t.Cleanup(func() { r.Close() })
	return r, pw
}

// nonblocking reports f's mode (read without f.Fd, which sets it).
func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	if err := rc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// A pipe in blocking mode is read through the poller, and put back as it
// was.
func TestPollableReadsAPipeThroughThePoller(t *testing.T) {
	r, w := blockingPipe(t)
	if err := r.SetReadDeadline(time.Time{}); !errors.Is(err, os.ErrNoDeadline) {
		t.Fatalf("the control: a blocking pipe's deadline: %v, want os.ErrNoDeadline", err)
	}
	p, restore := Pollable(r)
	if !pollsFIFOs { // macOS: see pollable_darwin.go
		if p != r {
			t.Fatal("a pipe was made non-blocking where the poller cannot see its end")
		}
		return
	}
	if p == r {
		t.Fatal("a blocking pipe was left as it is")
	}
	// Only the poller keeps a deadline: a read past one fails at once.
	if err := p.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatalf("deadline: %v", err)
	}
	if _, err := p.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	p.SetReadDeadline(time.Time{})
	if _, err := w.WriteString("{}\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, err := p.Read(buf); err != nil || string(buf[:n]) != "{}\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	restore()
	if nonblocking(t, r) {
		t.Fatal("the pipe is still in non-blocking mode after restore")
	}
	if _, err := p.Read(buf); err == nil {
		t.Fatal("the duplicate still reads after restore")
	}
}

// What is not a blocking pipe or socket is returned as it is.
func TestPollableLeavesOtherFilesAlone(t *testing.T) {
	regular, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer regular.Close()
	pr, pw, err := os.Pipe() // read through the poller already
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	for name, f := range map[string]*os.File{"regular file": regular, "pipe in the poller": pr} {
		p, restore := Pollable(f)
		restore()
		if p != f {
			t.Errorf("%s: replaced", name)
		}
	}
	if !nonblocking(t, pr) {
		t.Error("restore changed the mode of a pipe it left alone")
	}
}

// A socket that is stdin and stdout at once (inetd's, socat's) is left in
// blocking mode: the writes to it as stdout would fail with EAGAIN.
func TestPollableKeepsASocketThatIsAlsoStdout(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	in := os.NewFile(uintptr(fds[0]), "stdin") // blocking
	defer in.Close()
	outFD, err := unix.Dup(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	out := os.NewFile(uintptr(outFD), "stdout")
	defer out.Close()
	other, w := blockingPipe(t)
	defer w.Close()

	p, restore := Pollable(in, other, out)
	defer restore()
	if p != in {
		t.Fatal("a socket that is stdout too was made non-blocking")
	}
	// The control: kept files that are other files do not stop it.
	p, restore2 := Pollable(in, other)
	defer restore2()
	if p == in {
		t.Fatal("a socket apart from the kept files was left blocking")
	}
}

// restore ends a read of the duplicate in flight, even one that a line
// arriving as restore runs lets begin again: its Close would otherwise
// wait for a read(2) in blocking mode, which only the caller's next byte
// ends (a colibri told to stop, hanging until its caller writes).
func TestPollableRestoreEndsAReadInFlight(t *testing.T) {
	if !pollsFIFOs {
		t.Skip("macOS keeps a pipe in blocking mode (pollable_darwin.go): nothing to restore")
	}
	r, w := blockingPipe(t)
	p, restore := Pollable(r)
	reads := make(chan error, 16)
	go func() {
		buf := make([]byte, 1)
		for {
			_, err := p.Read(buf)
			reads <- err
			if err != nil {
				return
			}
		}
	}()
	testHookRestore = func() {
		// A byte comes between restore's two steps; the reader, if it
		// still reads, takes it and reads again.
		w.Write([]byte("x"))
		select {
		case <-reads:
			time.Sleep(50 * time.Millisecond) // into its next read
		case <-time.After(100 * time.Millisecond):
		}
	}
	defer func() { testHookRestore = func() {} }()
	restored := make(chan struct{})
	go func() {
		restore()
		close(restored)
	}()
	select {
	case <-restored:
	case <-time.After(5 * time.Second):
		w.Close() // what ends the read, and restore with it
		<-restored
		t.Fatal("restore waited for a read in flight until the writer closed")
	}
	if nonblocking(t, r) {
		t.Fatal("the pipe is still in non-blocking mode after restore")
	}
}
