package proctable

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// psSelectAll is ps's flag for every process (procps syntax); only the
// tests use ps here, to check the BSDs' reader against /proc.
const psSelectAll = "-e"

// stat is the fields of /proc/PID/stat after the command name: state,
// ppid, pgrp, …
func stat(pid string) []string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return nil
	}
	s := string(b)
	// The command name may hold spaces and parentheses: cut at the last ')'.
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// Alive reports whether pid is a live process (not a zombie).
func Alive(pid int) bool {
	f := stat(strconv.Itoa(pid))
	return len(f) > 0 && f[0] != "Z"
}

// each calls f with the pid and stat fields of every live process.
func each(f func(pid int, fields []string)) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if fields := stat(e.Name()); len(fields) > 2 && fields[0] != "Z" {
			f(pid, fields)
		}
	}
}

// GroupMembers lists the live processes of process group pgid.
func GroupMembers(pgid int) []int {
	var out []int
	want := strconv.Itoa(pgid)
	each(func(pid int, f []string) {
		if f[2] == want {
			out = append(out, pid)
		}
	})
	return out
}

// Children lists the live processes whose parent is pid.
func Children(pid int) []int {
	var out []int
	want := strconv.Itoa(pid)
	each(func(p int, f []string) {
		if f[1] == want {
			out = append(out, p)
		}
	})
	return out
}

// FDs counts pid's open file descriptors.
func FDs(pid int) int {
	entries, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	return len(entries)
}

// Memory reads a kB field of /proc/PID/status ("VmRSS", "VmHWM"), in bytes.
func Memory(pid int, field string) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n << 10
		}
	}
	return 0
}
