package proc

import (
	"os"
	"slices"
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
	var out []int
	for _, pi := range descendants() {
		if pi.flags&reaperPidinfoChild != 0 {
			out = append(out, int(pi.pid))
		}
	}
	return out
}

// descendants lists every descendant of the reaper, each with its reaper
// subtree (PROC_REAP_GETPIDS).
func descendants() []reaperPidinfo {
	buf := make([]reaperPidinfo, 4096)
	rp := reaperPids{count: uint32(len(buf)), pids: &buf[0]}
	if err := procctl(procReapGetpids, unsafe.Pointer(&rp)); err != nil {
		return nil
	}
	for i, pi := range buf {
		if pi.flags&reaperPidinfoValid == 0 {
			return buf[:i]
		}
	}
	return buf
}

// endSubtrees ends, while colibri lives, the reaper subtrees the orphans
// belong to (PROC_REAP_KILL with REAPER_KILL_SUBTREE): every process that
// descended from the same hosted server, however it left its group or
// session and whatever generation it is, in one system call that races no
// fork. A subtree is named by the pid of the reaper's child that began it:
// one that names a live server of colibri's own (its pid reused, or the
// orphan of a server that still serves) is left to the per-process kill
// (killOrphan), never ended whole. The caller holds the start lock, so
// that no server is given such a pid meanwhile.
func endSubtrees(orphans []int) {
	if len(orphans) == 0 {
		return
	}
	subtrees := map[int32]bool{}
	for _, pi := range descendants() {
		if pi.flags&reaperPidinfoChild != 0 && slices.Contains(orphans, int(pi.pid)) {
			subtrees[pi.subtree] = true
		}
	}
	for s := range subtrees {
		if s <= 0 || isOwn(int(s)) {
			continue
		}
		rk := reaperKill{sig: int32(syscall.SIGKILL), flags: reaperKillSubtree, subtree: s}
		procctl(procReapKill, unsafe.Pointer(&rk)) // ESRCH: nothing left in it
	}
}
