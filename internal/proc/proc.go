// Package proc holds what colibri asks of the OS about its own process and
// the processes it hosts: that colibri itself cannot be read or traced by
// them (ProtectSelf), that it becomes the reaper of everything they start
// (AcquireReaper), and that a hosted server's whole tree can be killed and
// reaped at teardown (KillTree, ReapAdopted), even the descendants that left
// its process group or session with setsid(2).
//
//	if err := proc.AcquireReaper(); err != nil { log… } // once, in main
//	…
//	err := proc.Start(cmd)      // instead of cmd.Start: the child is colibri's own
//	…
//	proc.KillTree(pid)          // at teardown, while pid is still alive
//	proc.ReapAdopted()          // orphans that were reparented to colibri
//
// Linux: prctl(PR_SET_DUMPABLE, 0) and prctl(PR_SET_CHILD_SUBREAPER); the tree
// is walked in /proc. FreeBSD: procctl(2) PROC_TRACE_CTL, PROC_REAP_ACQUIRE,
// PROC_REAP_KILL (REAPER_KILL_SUBTREE) and PROC_REAP_GETPIDS. Elsewhere the
// process group is all there is, and the functions say so.
package proc

import (
	"errors"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reaper is set once AcquireReaper succeeded: only then are orphans
// colibri's to reap (in-process tests and library users never acquire it,
// and their other children are never touched).
var reaper atomic.Bool

// ErrUnsupported is returned where the OS offers no such facility.
var ErrUnsupported = errors.New("not supported on this OS")

// IsReaper reports whether AcquireReaper succeeded in this process.
func IsReaper() bool { return reaper.Load() }

// KillTree sends SIGKILL to pid's process group and to every process the OS
// can still trace to pid (its descendants, in whatever session or group
// they are now). Call it while pid has not been reaped: once it has, its
// orphans are the reaper's (see ReapAdopted). It returns how many processes
// it signalled; EPERM (a descendant that changed user) is returned after
// every other process was signalled.
func KillTree(pid int) (int, error) {
	if pid <= 0 {
		return 0, nil
	}
	var firstErr error
	note := func(err error) {
		if err != nil && err != unix.ESRCH && firstErr == nil {
			firstErr = err
		}
	}
	// Stop the group first, and kill it last. A server killed first is
	// reaped by its waiter at once, and its descendants are handed to the
	// reaper (or init) before the walk below can trace them to pid; a
	// stopped one can neither be reaped nor fork while its tree is walked.
	note(unix.Kill(-pid, syscall.SIGSTOP))
	n, err := killDescendants(pid)
	note(err)
	note(unix.Kill(-pid, syscall.SIGKILL))
	return n, firstErr
}

// own is the children this process started through Start and has not yet
// reaped: any other child is an orphan the kernel reparented to it. It is
// process-wide, as the reaper is. spawning is held for reading across each
// start, and for writing by ReapAdopted, so that a child being started is
// never taken for an orphan.
var own struct {
	spawning sync.RWMutex
	mu       sync.Mutex
	pids     map[int]*os.Process
}

// Start starts cmd and remembers it as this process's own child until
// Reaped is called with its process (after cmd.Wait returns).
func Start(cmd *exec.Cmd) error {
	own.spawning.RLock()
	defer own.spawning.RUnlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	remember(cmd.Process)
	return nil
}

func remember(p *os.Process) {
	own.mu.Lock()
	defer own.mu.Unlock()
	if own.pids == nil {
		own.pids = map[int]*os.Process{}
	}
	own.pids[p.Pid] = p
}

// Reaped forgets p, a child started by Start, once it has been waited for.
// It forgets p itself, not whatever has its pid: once Wait has reaped p
// its pid is free, and a child started before Reaped runs may have it,
// which must stay colibri's own (else ReapAdopted kills it as an orphan).
func Reaped(p *os.Process) {
	own.mu.Lock()
	defer own.mu.Unlock()
	if own.pids[p.Pid] == p {
		delete(own.pids, p.Pid)
	}
}

func isOwn(pid int) bool {
	own.mu.Lock()
	defer own.mu.Unlock()
	return own.pids[pid] != nil
}

// ReapAdopted kills and reaps the children of this process that it did not
// start through Start: orphans of hosted servers that the kernel reparented
// to colibri, the reaper. Each is killed itself, with its process group
// when it leads one and every descendant the OS can trace to it: a classic
// daemon (a fork whose child calls setsid(2), forks again and exits) leads
// neither a session nor a group, so that signalling its group alone
// (kill(-pid), ESRCH) would leave it running. Without the reaper there are
// none to reap, and it does nothing. It returns how many it reaped.
//
// The start lock is held only while the children are listed (a child
// being started must not be taken for an orphan), never across the waits:
// the next request's server starts while the orphans die.
func ReapAdopted() int {
	if !reaper.Load() {
		return 0
	}
	// One reaper at a time: an orphan is signalled only while it is this
	// process's unreaped child, so that its pid names no other process.
	reaping.Lock()
	defer reaping.Unlock()
	n := 0
	// An orphan may have children of its own, which become colibri's in
	// turn once it dies: a few rounds end every generation.
	for range 8 {
		orphans := adopted()
		if len(orphans) == 0 {
			break
		}
		for _, pid := range orphans {
			killOrphan(pid)
		}
		for _, pid := range orphans {
			if reap(pid, reapWait) {
				n++
			}
		}
	}
	return n
}

// reaping is held by ReapAdopted across its rounds.
var reaping sync.Mutex

// adopted lists this process's children that it did not start: while the
// start lock is held, a child being started is already among its own.
func adopted() []int {
	own.spawning.Lock()
	defer own.spawning.Unlock()
	var out []int
	for _, pid := range children() {
		if !isOwn(pid) {
			out = append(out, pid)
		}
	}
	endSubtrees(out) // a system call or none: no wait
	return out
}

// killOrphan ends an adopted orphan and what it started. It is stopped
// first, itself and its group, so that it can neither fork nor be reaped
// while its descendants are found and killed; then its group and itself
// are killed. kill(-pid) reaches only a group this orphan created: a
// group's id is its creator's pid, which the kernel gives to no other
// process while the group lives, and this one's pid is held until it is
// reaped.
func killOrphan(pid int) {
	unix.Kill(pid, syscall.SIGSTOP)
	unix.Kill(-pid, syscall.SIGSTOP)
	killDescendants(pid)
	unix.Kill(-pid, syscall.SIGKILL)
	unix.Kill(pid, syscall.SIGKILL)
}

// reapWait bounds the wait for one killed orphan (SIGKILL is delivered at
// once unless the process sleeps uninterruptibly in the kernel).
const reapWait = 2 * time.Second

// reap waits for the killed child pid, at most d, so that it leaves no zombie.
func reap(pid int, d time.Duration) bool {
	done := make(chan bool, 1)
	go func() {
		var ws unix.WaitStatus
		_, err := unix.Wait4(pid, &ws, 0, nil)
		done <- err == nil
	}()
	select {
	case ok := <-done:
		return ok
	case <-time.After(d):
		return false
	}
}
