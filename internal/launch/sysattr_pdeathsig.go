//go:build linux || freebsd

package launch

import "syscall"

// sysProcAttr starts the child as the leader of a new session (setsid(2)):
// it has no controlling terminal, so it can neither open /dev/tty nor push
// keystrokes into the operator's shell (TIOCSTI), and it leads a process
// group of its own, which can be killed at once (grandchildren included:
// sh -c, npx, jail -c all fork). The kernel SIGKILLs it if colibri dies
// (Pdeathsig: prctl(PR_SET_PDEATHSIG) on Linux, procctl(PROC_PDEATHSIG_CTL)
// on FreeBSD).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
