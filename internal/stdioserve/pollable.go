package stdioserve

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Pollable returns a file whose reads wait in the Go runtime's poller for
// f, when f is a pipe or a socket in blocking mode, as an editor's spawn
// (and Go's os/exec) leaves a child's stdin; else f itself. The file is a
// duplicate of f's descriptor; restore puts the open file back in
// blocking mode (a mode of the open file, which a process that shares it
// reads after colibri: a shell's `(colibri-mcp; cat) < fifo`) and closes
// the duplicate, ending a read still waiting on it. A terminal or a
// regular file is left as it is (and a pipe on macOS: pollsFIFOs), and so
// is f when one of keep is the same file (a socket that is stdin and
// stdout at once, as inetd and socat give): the mode would change under
// keep's writes, which would then fail with EAGAIN rather than wait.
//
// Why: a blocking read holds its thread in read(2), so the goroutine a
// line is handed to (serve --only's fast path, go-sdk's handlers) waits
// for another thread to be woken for it; read from the poller, the reading
// goroutine parks and the one it handed the line to runs on the same
// thread at once. serve --only's warm tools/call gains about 0.05 ms on
// this project's 2-CPU VM (docs/benchmarks.md, "The serve --only hop").
func Pollable(f *os.File, keep ...*os.File) (_ *os.File, restore func()) {
	unchanged := func() {}
	if f.SetReadDeadline(time.Time{}) == nil {
		return f, unchanged // read through the poller already
	}
	fd := int(f.Fd()) // (in blocking mode already: Fd changes nothing)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return f, unchanged
	}
	switch kind := st.Mode & unix.S_IFMT; {
	case kind == unix.S_IFSOCK:
	case kind == unix.S_IFIFO && pollsFIFOs:
	default:
		return f, unchanged
	}
	for _, k := range keep {
		rc, err := k.SyscallConn() // (k.Fd would change k's mode)
		if err != nil {
			return f, unchanged
		}
		var kst unix.Stat_t
		var statErr error
		if err := rc.Control(func(kfd uintptr) { statErr = unix.Fstat(int(kfd), &kst) }); err != nil || statErr != nil || kst.Dev == st.Dev && kst.Ino == st.Ino {
			return f, unchanged // the same file (or one colibri cannot tell apart)
		}
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return f, unchanged
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return f, unchanged
	}
	p := os.NewFile(uintptr(dup), f.Name())
	return p, func() {
		// The duplicate is closed first, and the mode put back through f,
		// the same open file: a read of p in flight is non-blocking, so
		// Close ends it at once. Put back in blocking mode first, a read
		// that began in between (a line that came as serve ended) would
		// wait in read(2) for the caller's next byte, and Close with it,
		// as the poller cannot wake a read it is not waiting for.
		p.Close()
		testHookRestore()
		if rc, err := f.SyscallConn(); err == nil { // (f's descriptor, held open while it is used)
			rc.Control(func(fd uintptr) { unix.SetNonblock(int(fd), false) })
		}
	}
}

// testHookRestore runs between the two steps of Pollable's restore, for a
// test to read there.
var testHookRestore = func() {}
