//go:build !linux && !freebsd

package launch

import "syscall"

// sysProcAttr starts the child in a session of its own: no controlling
// terminal, and a process group that can be killed at once.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
