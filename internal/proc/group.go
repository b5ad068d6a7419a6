package proc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// killGroup signals the process group led by pgid (every hosted process leads
// its own group: see sysProcAttr). A group that is already gone is success.
func killGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 0 {
		return nil
	}
	if err := unix.Kill(-pgid, sig); err != nil && err != unix.ESRCH {
		return err
	}
	return nil
}
