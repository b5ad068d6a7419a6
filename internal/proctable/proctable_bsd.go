//go:build !linux

package proctable

import (
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// psSelectAll is ps's flag for every process (BSD syntax).
const psSelectAll = "-ax"

func table() []proc { return psTable(psSelectAll) }

// Alive reports whether pid is a live process (not a zombie).
func Alive(pid int) bool {
	for _, p := range table() {
		if p.pid == pid {
			return !p.zombie
		}
	}
	return false
}

// GroupMembers lists the live processes of process group pgid.
func GroupMembers(pgid int) []int {
	var out []int
	for _, p := range table() {
		if p.pgid == pgid && !p.zombie {
			out = append(out, p.pid)
		}
	}
	return out
}

// Children lists the live processes whose parent is pid.
func Children(pid int) []int {
	var out []int
	for _, p := range table() {
		if p.ppid == pid && !p.zombie {
			out = append(out, p.pid)
		}
	}
	return out
}

// FDs counts pid's open file descriptors (procstat -f, FreeBSD).
func FDs(pid int) int {
	if runtime.GOOS != "freebsd" {
		panic("procs: counting another process's descriptors needs procstat(1), which " + runtime.GOOS + " lacks")
	}
	out, err := exec.Command("procstat", "-f", strconv.Itoa(pid)).Output()
	if err != nil {
		panic(fmt.Sprintf("procs: procstat -f %d: %v", pid, err))
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n")[1:] { // a header first
		f := strings.Fields(line)
		// cwd, root and jail rows are not descriptors: their FD column is text.
		if len(f) > 2 {
			if _, err := strconv.Atoi(f[2]); err == nil {
				n++
			}
		}
	}
	return n
}

// Memory reports "VmRSS" (ps rss) in bytes. ps(1) has no peak figure:
// "VmHWM" panics rather than answer with a wrong one.
func Memory(pid int, field string) int64 {
	if field != "VmRSS" {
		panic("procs: " + field + " is known on Linux only")
	}
	out, err := exec.Command("ps", "-o", "rss=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return 0 // the process is gone
	}
	kb, _ := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	return kb << 10
}
