// Package proctable reads process facts for colibri's tests and benchmarks:
// whether a process lives, the members of a process group, a process's
// children, its open descriptors and memory. On Linux it reads /proc; on
// FreeBSD (colibri's target) and other BSDs it asks ps(1) and procstat(1),
// which read the kernel's kinfo_proc.
//
//	for _, pid := range proctable.GroupMembers(pgid) { … } // empty once the group is gone
//
// It never answers "nothing" because it could not look: where it cannot
// tell, it panics, so that a leak assertion fails loudly instead of passing
// silently. It is test tooling: no production package imports it.
package proctable

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// proc is one line of the process table.
type proc struct {
	pid, ppid, pgid int
	zombie          bool
}

// psTable runs ps with the selection flags sel (-e on Linux, -ax on the
// BSDs) and parses its pid, ppid, pgid and state columns.
func psTable(sel string) []proc {
	out, err := exec.Command("ps", sel, "-o", "pid=,ppid=,pgid=,stat=").Output()
	if err != nil {
		panic(fmt.Sprintf("procs: cannot list processes with ps: %v", err))
	}
	return parsePS(string(out))
}

// parsePS reads "PID PPID PGID STAT" lines.
func parsePS(out string) []proc {
	var table []proc
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		ppid, err2 := strconv.Atoi(f[1])
		pgid, err3 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || err3 != nil {
			panic(fmt.Sprintf("procs: unexpected ps line %q", line))
		}
		table = append(table, proc{pid: pid, ppid: ppid, pgid: pgid, zombie: strings.HasPrefix(f[3], "Z")})
	}
	return table
}
