package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeUnread is how many bytes the pipe f is our end of holds unread
// (FIONREAD, which Linux answers on either end of a pipe, and still after
// its reader has closed).
func pipeUnread(f *os.File) (int64, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || ierr != nil {
		return 0, false
	}
	return int64(n), true
}
