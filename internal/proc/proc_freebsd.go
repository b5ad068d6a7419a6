package proc

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// From <sys/procctl.h> and <sys/wait.h>; x/sys has the syscall number only.
const (
	pPID = 0 // idtype_t P_PID

	procReapAcquire = 2
	procReapGetpids = 5
	procReapKill    = 6
	procTraceCtl    = 7

	procTraceCtlDisable = 2
	reaperKillSubtree   = 0x2
	reaperPidinfoValid  = 0x1
	reaperPidinfoChild  = 0x2
)

// struct procctl_reaper_kill
type reaperKill struct {
	sig     int32
	flags   uint32
	subtree int32
	killed  uint32
	fpid    int32
	pad     [15]uint32
}

// struct procctl_reaper_pidinfo
type reaperPidinfo struct {
	pid     int32
	subtree int32
	flags   uint32
	pad     [15]uint32
}

// struct procctl_reaper_pids
type reaperPids struct {
	count uint32
	pad   [15]uint32
	pids  *reaperPidinfo
}

func procctl(cmd int, data unsafe.Pointer) error {
	_, _, errno := unix.Syscall6(unix.SYS_PROCCTL, pPID, uintptr(os.Getpid()), uintptr(cmd), uintptr(data), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// ProtectSelf disables tracing of colibri's process and core dumps
// (PROC_TRACE_CTL_DISABLE): other processes of the same user, hosted servers
// among them, can no longer read its environment or memory (procstat -e,
// ptrace). Root still can.
func ProtectSelf() error {
	v := int32(procTraceCtlDisable)
	return procctl(procTraceCtl, unsafe.Pointer(&v))
}

// AcquireReaper makes colibri a reaper (PROC_REAP_ACQUIRE): the kernel keeps
// every descendant of each hosted server, orphans included, in that
// server's reaper subtree, which KillTree ends whole.
func AcquireReaper() error {
	if err := procctl(procReapAcquire, nil); err != nil {
		return err
	}
	reaper.Store(true)
	return nil
}

// killDescendants ends pid's reaper subtree (PROC_REAP_KILL with
// REAPER_KILL_SUBTREE): every process that descended from pid, however it
// left its group or session, and even after its parent died. It needs the
// reaper; without it only the process group was signalled.
func killDescendants(pid int) (int, error) {
	if !reaper.Load() {
		return 0, nil
	}
	rk := reaperKill{sig: int32(syscall.SIGKILL), flags: reaperKillSubtree, subtree: int32(pid)}
	err := procctl(procReapKill, unsafe.Pointer(&rk))
	if err == unix.ESRCH {
		err = nil // nothing left in the subtree
	}
	return int(rk.killed), err
}

// children lists the reaper's direct children (PROC_REAP_GETPIDS).
func children() []int {
	buf := make([]reaperPidinfo, 4096)
	rp := reaperPids{count: uint32(len(buf)), pids: &buf[0]}
	if err := procctl(procReapGetpids, unsafe.Pointer(&rp)); err != nil {
		return nil
	}
	var out []int
	for _, pi := range buf {
		if pi.flags&reaperPidinfoValid == 0 {
			break
		}
		if pi.flags&reaperPidinfoChild != 0 {
			out = append(out, int(pi.pid))
		}
	}
	return out
}
