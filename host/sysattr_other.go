//go:build !linux && !freebsd

package host

import "syscall"

// sysProcAttr puts the child in a process group of its own, so that the
// whole group can be killed at once.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
