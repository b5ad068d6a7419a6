//go:build linux && (mips || mipsle || mips64 || mips64le)

package early

import (
	"syscall"
	"unsafe"
)

// setDefault restores sig's default action behind Go's runtime
// (rt_sigaction: MIPS puts the flags first and has a 128-bit mask).
func setDefault(sig syscall.Signal) {
	var act struct {
		flags   uint32
		handler uintptr
		mask    [4]uint32
	}
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, unsafe.Sizeof(act.mask), 0, 0)
}
