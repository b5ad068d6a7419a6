package proc

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// pipeUnread is how many bytes the pipe f is our end of holds unread
// (FIONREAD, which Linux answers on either end of a pipe, and still after
// its reader has closed), known only once no process is left that could
// read them: the server's leader being reaped is not enough, since a
// process it started (a launcher's real server, a helper given its stdin)
// may hold the pipe and read on. Linux's poll reports POLLERR on a pipe's
// write end once it has no reader, and none can come back, so the count
// then stays; pipeUnread waits up to wait for that.
func pipeUnread(f *os.File, wait time.Duration) (int64, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	var n int
	known := false
	if err := rc.Control(func(fd uintptr) {
		if !noReader(int(fd), wait) {
			return
		}
		var ierr error
		n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ)
		known = ierr == nil
	}); err != nil || !known {
		return 0, false
	}
	return int64(n), true
}

// noReader reports whether the pipe whose write end is fd has no reader
// left, waiting up to wait for the last to go. With no events asked, poll
// wakes only for the error (or hang-up) it always reports.
func noReader(fd int, wait time.Duration) bool {
	pfd := []unix.PollFd{{Fd: int32(fd)}}
	deadline := time.Now().Add(wait)
	for {
		ms := int(time.Until(deadline).Milliseconds())
		if ms < 0 {
			ms = 0
		}
		_, err := unix.Poll(pfd, ms)
		switch {
		case errors.Is(err, unix.EINTR) && ms > 0:
			continue
		case err != nil:
			return false
		}
		return pfd[0].Revents&unix.POLLERR != 0
	}
}
