package proc

import (
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ProtectSelf makes colibri's process non-dumpable: other processes of the
// same user (hosted servers among them) can no longer read
// /proc/COLIBRI/environ or /proc/COLIBRI/mem, nor ptrace it. Root's
// processes still can (CAP_SYS_PTRACE).
func ProtectSelf() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// AcquireReaper makes colibri a child subreaper (PR_SET_CHILD_SUBREAPER):
// a hosted server's orphaned descendants are reparented to colibri rather
// than to init, so that ReapAdopted can end them. No privilege is needed.
func AcquireReaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	reaper.Store(true)
	return nil
}

// table reads pid → ppid of every live process from /proc.
func table() map[int]int {
	entries, _ := os.ReadDir("/proc")
	t := make(map[int]int, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// "PID (COMM) STATE PPID …": COMM may hold spaces and parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		t[pid] = ppid
	}
	return t
}

// killDescendants signals every descendant of pid, walking /proc until no
// new one appears (a process may fork while its tree is being killed).
func killDescendants(pid int) (int, error) {
	killed := map[int]bool{}
	var firstErr error
	for range 8 {
		t := table()
		kids := map[int][]int{}
		for p, pp := range t {
			kids[pp] = append(kids[pp], p)
		}
		fresh := 0
		for queue := []int{pid}; len(queue) > 0; {
			p := queue[0]
			queue = queue[1:]
			for _, c := range kids[p] {
				queue = append(queue, c)
				if !killed[c] {
					killed[c] = true
					fresh++
					if err := unix.Kill(c, syscall.SIGKILL); err != nil && err != unix.ESRCH && firstErr == nil {
						firstErr = err
					}
				}
			}
		}
		if fresh == 0 {
			break
		}
	}
	return len(killed), firstErr
}

// endSubtrees has nothing to do on Linux: killOrphan walks each orphan's
// descendants in /proc.
func endSubtrees([]int) {}

// children lists this process's children: from the "children" file of
// each of its threads (Linux 3.5 and later, CONFIG_PROC_CHILDREN), a read
// per thread; where the kernel has none, or the files never read the same
// twice, from the whole process table, a read per process on the machine
// (a millisecond or more, which a teardown would spend while the next
// request's spawn waits: see ReapAdopted).
func children() []int {
	if out, ok := stableTaskChildren(); ok {
		return out
	}
	self := os.Getpid()
	var out []int
	for p, pp := range table() {
		if pp == self {
			out = append(out, p)
		}
	}
	return out
}

// stableTaskChildren reads the threads' children files until two reads in
// a row name the same children. One read alone may miss a child: the
// kernel walks a thread's list by position, so a child reaped while the
// list is read (another request's server ending) moves the ones after it
// back a place, and one of them is skipped (the kernel documents the file
// as exact only while the process and its children are stopped); a thread
// that ends hands its children to a thread that may already have been
// read. A child reaped during a read was named by it and is gone from the
// next, so two reads that agree saw no such change. ok is false when the
// kernel has no such file, or the reads never agreed.
func stableTaskChildren() ([]int, bool) {
	prev, ok := taskChildren()
	if !ok {
		return nil, false
	}
	for range 8 {
		cur, ok := taskChildren()
		if !ok {
			return nil, false
		}
		if maps.Equal(prev, cur) {
			return slices.Collect(maps.Keys(cur)), true
		}
		prev = cur
	}
	return nil, false
}

// taskChildren reads /proc/self/task/*/children once (an orphan is adopted
// by whichever of the reaper's threads the kernel picks); ok is false when
// the kernel has no such file.
func taskChildren() (out map[int]bool, ok bool) {
	self := strconv.Itoa(os.Getpid())
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, false
	}
	out = map[int]bool{}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			if t.Name() == self {
				return nil, false // the main thread lives as long as the process: no such file
			}
			continue // a thread that ended meanwhile
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out[pid] = true
			}
		}
	}
	return out, true
}
