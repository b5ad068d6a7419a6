//go:build linux || freebsd

package host

import "syscall"

// sysProcAttr puts the child in a process group of its own, so that the
// whole group (grandchildren included: sh -c, npx, jail -c all fork) can be
// killed at once, and asks the kernel to SIGKILL the child if colibri dies
// (Pdeathsig: prctl(PR_SET_PDEATHSIG) on Linux, procctl(PROC_PDEATHSIG_CTL)
// on FreeBSD).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
