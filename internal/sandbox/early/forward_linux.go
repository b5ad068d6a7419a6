package early

import (
	"syscall"
	"unsafe"
)

// ForwardMarker is argv[1] of the launcher run as the egress forwarder:
// inside a sandboxed server's network namespace, it carries each
// connection to the loopback port the launcher listens on (its
// descriptor 3) to colibri's egress proxy, over the pathname Unix socket
// argv[2] names, outside the namespace (docs/security.md, "Egress by
// destination").
const ForwardMarker = "__colibri_egress_forwarder"

// forwardMain is the forwarder; it returns only to fail.
func forwardMain(args []string) error {
	if len(args) != 3 || args[2] == "" || args[2][0] != '/' || len(args[2]) > 107 {
		return planError("usage: " + ForwardMarker + " SOCKET (colibri starts this itself)")
	}
	path := args[2]
	const lfd = 3
	for {
		c, _, err := syscall.Accept4(lfd, syscall.SOCK_CLOEXEC)
		if err == syscall.EINTR || err == syscall.ECONNABORTED {
			continue
		}
		if err != nil {
			return fail("accepting a connection for the egress proxy", err)
		}
		go carry(c, path)
	}
}

// carry joins the server's connection c to a new one to the proxy.
func carry(c int, path string) {
	defer syscall.Close(c)
	u, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer syscall.Close(u)
	if err := syscall.Connect(u, &syscall.SockaddrUnix{Name: path}); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		pump(c, u)
		close(done)
	}()
	pump(u, c)
	<-done
}

// pump copies from one descriptor to the other until the end, then says
// so to the other side (shutdown(SHUT_WR)): through a pipe with splice(2),
// the bytes never copied into the forwarder (docs/benchmarks.md, "Egress
// proxy"), or, where splice is refused, through a buffer.
func pump(from, to int) {
	var p [2]int
	if syscall.Pipe2(p[:], syscall.O_CLOEXEC) == nil {
		carried, ok := splicePump(from, to, p)
		syscall.Close(p[0])
		syscall.Close(p[1])
		if carried {
			if !ok {
				syscall.Shutdown(from, syscall.SHUT_RD)
			}
			return
		}
	}
	copyPump(from, to)
}

// spliceLen is how much one splice(2) moves at most; the pipe is grown to
// it (F_SETPIPE_SZ) where the system lets it.
const spliceLen = 256 << 10

// splicePump is pump through the pipe p. carried: it carried everything
// to the end (ok), or until a side failed (!ok); !carried: splice is
// refused here before any byte moved, and the caller copies instead.
func splicePump(from, to int, p [2]int) (carried, ok bool) {
	const fSetPipeSz = 1031 // F_SETPIPE_SZ
	chunk := spliceLen
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(p[1]), fSetPipeSz, spliceLen); e != 0 {
		chunk = 64 << 10 // the default pipe's size
	}
	moved := false
	for {
		n, err := syscall.Splice(from, nil, p[1], nil, chunk, 0)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EINVAL && !moved {
			return false, true
		}
		if err != nil || n <= 0 {
			syscall.Shutdown(to, syscall.SHUT_WR)
			return true, err == nil
		}
		moved = true
		for n > 0 {
			m, err := syscall.Splice(p[0], nil, to, nil, int(n), 0)
			if err == syscall.EINTR {
				continue
			}
			if err != nil || m <= 0 {
				return true, false
			}
			n -= m
		}
	}
}

// copyPump is pump through a buffer.
func copyPump(from, to int) {
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(from, buf)
		if err == syscall.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			break
		}
		for off := 0; off < n; {
			m, err := syscall.Write(to, buf[off:n])
			if err == syscall.EINTR {
				continue
			}
			if err != nil || m <= 0 {
				syscall.Shutdown(from, syscall.SHUT_RD)
				return
			}
			off += m
		}
	}
	syscall.Shutdown(to, syscall.SHUT_WR)
}

// netns prepares the server's network namespace, which colibri made with
// the launcher (clone(2) with CLONE_NEWUSER and CLONE_NEWNET, the
// launcher's user mapped to itself, CAP_NET_ADMIN in the namespace as an
// ambient capability): loopback up, a listener on 127.0.0.1:port, and the
// forwarder started on it, before the server's rules apply.
func (p *Plan) netns() error {
	s, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail("bringing loopback up in the network namespace", err)
	}
	var ifr [40]byte // struct ifreq: the name, then the flags
	copy(ifr[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(s), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		syscall.Close(s)
		return fail("bringing loopback up in the network namespace", e)
	}
	flags := uint16(ifr[16]) | uint16(ifr[17])<<8 | syscall.IFF_UP | syscall.IFF_RUNNING
	ifr[16], ifr[17] = byte(flags), byte(flags>>8)
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(s), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr[0])))
	syscall.Close(s)
	if e != 0 {
		return fail("bringing loopback up in the network namespace", e)
	}
	l, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail("listening for the egress proxy", err)
	}
	defer syscall.Close(l)
	if err := syscall.Bind(l, &syscall.SockaddrInet4{Port: int(p.Port), Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fail("listening for the egress proxy", err)
	}
	if err := syscall.Listen(l, 128); err != nil {
		return fail("listening for the egress proxy", err)
	}
	null, err := syscall.Open("/dev/null", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fail("starting the egress forwarder", err)
	}
	defer syscall.Close(null)
	_, err = syscall.ForkExec("/proc/self/exe", []string{"colibri-egress-forwarder", ForwardMarker, p.ProxySock},
		&syscall.ProcAttr{Files: []uintptr{uintptr(null), uintptr(null), 2, uintptr(l)},
			Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}})
	if err != nil {
		return fail("starting the egress forwarder", err)
	}
	return nil
}
