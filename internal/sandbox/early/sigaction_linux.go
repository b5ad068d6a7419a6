//go:build linux && !mips && !mipsle && !mips64 && !mips64le

package early

import (
	"syscall"
	"unsafe"
)

// setDefault restores sig's default action behind Go's runtime
// (rt_sigaction: handler, flags, restorer, mask; unsigned long flags).
func setDefault(sig syscall.Signal) {
	var act struct {
		handler, flags, restorer uintptr
		mask                     uint64
	}
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, unsafe.Sizeof(act.mask), 0, 0)
}
