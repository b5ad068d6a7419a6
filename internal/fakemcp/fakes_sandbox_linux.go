package main

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tryMore are the prisoner's attacks that need Linux's own calls: a
// pathname Unix socket (unix, path), another process's resource limits
// (prlimit, pid: the target's own values written back, so that only the
// permission is tested), shared memory past the limits (shm, mb), the file
// descriptors it inherited (fds), a hard link, a rename or a symbolic link
// from path to addr then read through it (link, rename, symlink), a
// socket of any family (socket, addr "DOMAIN/TYPE"), a Unix socket pair
// (pair, addr "stream", "seqpacket" or "dgram"), /dev/zero mapped shared
// and writable (devzero, mb: its resident size after), many socket pairs
// at once (pairs, pid: how many), another process's
// System V shared memory (shmread, pid: the segment's id), a key of the
// user's keyring (keyread, addr: its description), a shell command line
// (sh, path), another process's memory (vmread, pid) or counters (perf,
// pid), a Unix stream socket to path, a UDP datagram to addr or a Unix
// datagram pair made with bits above the family's 32 set (unixhi, udphi,
// pairhi).
func tryMore(op, path, addr string, pid, mb int) (string, error) {
	switch op {
	case "unix":
		c, err := net.Dial("unix", path)
		if err != nil {
			return "", err
		}
		c.Close()
		return "connected", nil
	case "unixhi", "udphi", "pairhi":
		// The family with bits above its 32 set: the kernel reads an int,
		// a seccomp filter comparing the whole register would not match.
		return highFamily(op, path, addr)
	case "unixgram":
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		return "sent", unix.Sendto(fds[0], []byte("prisoner"), 0, &unix.SockaddrUnix{Name: path})
	case "pair": // addr "stream", "seqpacket" or "dgram": a Unix socket pair, one message across it
		typ := map[string]int{"stream": unix.SOCK_STREAM, "seqpacket": unix.SOCK_SEQPACKET, "dgram": unix.SOCK_DGRAM}[addr]
		fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		if _, err := unix.Write(fds[0], []byte("ping")); err != nil {
			return "", err
		}
		b := make([]byte, 8)
		n, err := unix.Read(fds[1], b)
		return string(b[:max(n, 0)]), err
	case "devzero": // mb of /dev/zero mapped shared and writable, touched; its resident size
		f, err := os.OpenFile("/dev/zero", os.O_RDWR, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err := unix.Mmap(int(f.Fd()), 0, mb<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return "", err
		}
		defer unix.Munmap(b)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return fmt.Sprintf("rss %d MiB", residentMiB()), nil
	case "pairs": // pid Unix stream socket pairs held open at once
		var fds []int
		defer func() {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}()
		for len(fds) < 2*pid {
			p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return "", fmt.Errorf("after %d pairs: %w", len(fds)/2, err)
			}
			fds = append(fds, p[0], p[1])
		}
		return fmt.Sprintf("%d pairs", pid), nil
	case "socket": // addr "DOMAIN/TYPE", numbers: only the socket is made
		d, ty, _ := strings.Cut(addr, "/")
		domain, _ := strconv.Atoi(d)
		typ, _ := strconv.Atoi(ty)
		fd, err := unix.Socket(domain, typ, 0)
		if err != nil {
			return "", err
		}
		unix.Close(fd)
		return "made", nil
	case "shmread": // pid: a System V shared memory segment's id
		b, err := unix.SysvShmAttach(pid, 0, unix.SHM_RDONLY)
		if err != nil {
			return "", err
		}
		defer unix.SysvShmDetach(b)
		return string(b[:bytes.IndexByte(append(b, 0), 0)]), nil
	case "keyread": // addr: the description of a "user" key in the user's keyring
		id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", addr, 0)
		if err != nil {
			return "", err
		}
		buf := make([]byte, 256)
		n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
		if err != nil {
			return "", err
		}
		return string(buf[:min(n, len(buf))]), nil
	case "sh": // path: a shell command line; its output
		out, err := exec.Command("/bin/sh", "-c", path).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%w: %s", err, out)
		}
		return string(out), nil
	case "vmread": // one byte of pid's memory at its auxv's first address
		b := make([]byte, 1)
		_, err := unix.ProcessVMReadv(pid, []unix.Iovec{{Base: &b[0], Len: 1}},
			[]unix.RemoteIovec{{Base: 0x400000, Len: 1}}, 0)
		return "read", err
	case "perf": // a software counter on pid
		attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_TASK_CLOCK}
		attr.Size = uint32(unsafe.Sizeof(attr))
		fd, err := unix.PerfEventOpen(&attr, pid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			return "", err
		}
		unix.Close(fd)
		return "counting", nil
	case "prlimit":
		var old unix.Rlimit
		if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
			return "", err
		}
		return "set", unix.Prlimit(pid, unix.RLIMIT_NOFILE, &old, nil)
	case "renice":
		prio, err := unix.Getpriority(unix.PRIO_PROCESS, pid)
		if err != nil {
			return "", err
		}
		return "reniced", unix.Setpriority(unix.PRIO_PROCESS, pid, 20-prio)
	case "affinity":
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(pid, &set); err != nil {
			return "", err
		}
		return "pinned", unix.SchedSetaffinity(pid, &set)
	case "shm":
		b, err := unix.Mmap(-1, 0, mb<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
		if err != nil {
			return "", err
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return strconv.Itoa(mb) + " MiB shared", nil
	case "fds":
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return "", err
		}
		var out []string
		for _, e := range ents {
			if n, _ := strconv.Atoi(e.Name()); n > 2 {
				t, _ := os.Readlink("/proc/self/fd/" + e.Name())
				out = append(out, e.Name()+"="+t)
			}
		}
		return strings.Join(out, " "), nil
	case "link":
		return "linked", os.Link(path, addr)
	case "rename":
		return "renamed", os.Rename(path, addr)
	case "symlink":
		if err := os.Symlink(path, addr); err != nil {
			return "", err
		}
		b, err := os.ReadFile(addr)
		return fmt.Sprintf("%d bytes", len(b)), err
	case "mknod":
		return "made", unix.Mknod(path, syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 3)))
	}
	return "", errNoOp
}

// residentMiB is the process's resident set (VmRSS), in MiB.
func residentMiB() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb >> 10
		}
	}
	return -1
}

// inetSocket connects to addr (IPv4) by a stream socket that is not TCP
// (op mptcp: IPPROTO_MPTCP) or by SCTP (op sctp: SOCK_SEQPACKET), which
// Landlock's TCP rule does not see.
func inetSocket(op, addr string) (string, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return "", fmt.Errorf("not an IPv4 address and port: %q", addr)
	}
	typ, proto := syscall.SOCK_STREAM, 262 // IPPROTO_MPTCP
	if op == "sctp" {
		typ, proto = syscall.SOCK_SEQPACKET, 0
	}
	fd, err := syscall.Socket(syscall.AF_INET, typ|syscall.SOCK_CLOEXEC, proto)
	if err != nil {
		return "", err
	}
	defer syscall.Close(fd)
	if err := syscall.Connect(fd, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		return "", err
	}
	return "connected", nil
}

// highFamily is op unixhi (connect to the Unix socket path), udphi (a
// datagram to the IPv4 addr) or pairhi (a Unix datagram pair), each
// socket made with 1<<32 added to its family, which the kernel drops.
func highFamily(op, path, addr string) (string, error) {
	const hi = 1 << 32
	if op == "pairhi" {
		var fds [2]int32
		if _, _, e := unix.RawSyscall6(unix.SYS_SOCKETPAIR, hi|unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0, uintptr(unsafe.Pointer(&fds)), 0, 0); e != 0 {
			return "", e
		}
		unix.Close(int(fds[0]))
		unix.Close(int(fds[1]))
		return "paired", nil
	}
	family, typ := uintptr(unix.AF_UNIX), uintptr(unix.SOCK_STREAM)
	if op == "udphi" {
		family, typ = unix.AF_INET, unix.SOCK_DGRAM
	}
	fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, hi|family, typ|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		return "", e
	}
	defer unix.Close(int(fd))
	if op == "unixhi" {
		if err := unix.Connect(int(fd), &unix.SockaddrUnix{Name: path}); err != nil {
			return "", err
		}
		return "connected", nil
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return "", fmt.Errorf("not an IPv4 address and port: %q", addr)
	}
	return "sent", unix.Sendto(int(fd), []byte("prisoner"), 0, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()})
}
