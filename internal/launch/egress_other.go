//go:build !linux

package launch

import "syscall"

// netnsAvailable is false: network namespaces are Linux's (and so is the
// sandbox).
func (b *Builder) netnsAvailable() bool { return false }

// netnsAttr is a unchanged: never called off Linux.
func netnsAttr(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }
