package main

import (
	"runtime"
	"syscall"
)

// ptraceAttach attaches to pid, waits for it to stop and detaches.
func ptraceAttach(pid int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := syscall.PtraceAttach(pid); err != nil {
		return err
	}
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, syscall.WALL, nil)
	return syscall.PtraceDetach(pid)
}
