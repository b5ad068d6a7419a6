package early

import (
	"runtime"
	"syscall"
	"unsafe"
)

func init() {
	if args, ok := cmdline(); ok {
		Run(args)
	}
}

// Run is the launcher when args are its argv: it confines the process and
// execs the command, or writes why it cannot to stderr and exits with
// status 126 (colibri's handshake error then shows the reason as the
// server's stderr). For any other args it returns.
func Run(args []string) {
	if len(args) > 1 && args[1] == ForwardMarker {
		err := forwardMain(args)
		syscall.Write(2, []byte("colibri egress forwarder: "+err.Error()+"\n"))
		syscall.Exit(126)
	}
	if !IsLauncher(args) {
		return
	}
	launcherArgs = args
	p, err := Parse(args)
	if err == nil {
		err = p.apply()
	}
	syscall.Write(2, []byte("colibri sandbox: "+err.Error()+"\n"))
	syscall.Exit(126)
}

// cmdline reads the process's arguments from /proc/self/cmdline, as the
// kernel holds them: NUL-terminated strings.
func cmdline() ([]string, bool) {
	fd, err := syscall.Open("/proc/self/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	var args []string
	for start, i := 0, 0; i < len(buf); i++ {
		if buf[i] == 0 {
			args = append(args, string(buf[start:i]))
			start = i + 1
		}
	}
	return args, true
}

// Constants package syscall lacks (the same on every Linux architecture).
const (
	prSetNoNewPrivs    = 38
	oPath              = 0x200000
	landlockConnectTCP = 1 << 1 // LANDLOCK_ACCESS_NET_CONNECT_TCP
)

// sysErr is a failed step: what, and the kernel's error.
type sysErr struct {
	what string
	err  error
}

func (e *sysErr) Error() string { return e.what + ": " + e.err.Error() }

func fail(what string, err error) error { return &sysErr{what, err} }

// apply confines the calling process and replaces it with p.Argv.
// Everything happens on one locked OS thread: no_new_privs, the seccomp
// filters and the Landlock domain are per thread until execve, after which
// that thread is the whole process.
func (p *Plan) apply() error {
	if p.Fail != "" {
		return planError(p.Fail)
	}
	if len(p.Filters) == 0 {
		// colibri always sends one (prlimit, System V IPC, keyrings): a
		// plan without is not colibri's, and nothing starts unfiltered.
		return planError("the plan has no seccomp filter")
	}
	runtime.LockOSThread() // never unlocked: this thread becomes the server
	env := syscall.Environ()
	if p.Home != "" {
		if err := mkdirAll(p.Home); err != nil {
			return fail("making the private HOME", err)
		}
		env = setEnv(env, "HOME", p.Home)
	}
	if p.Tmp == "" || p.Tmp[0] != '/' {
		return planError("the plan has no private TMPDIR")
	}
	if err := mkdirAll(p.Tmp); err != nil {
		return fail("making the private TMPDIR", err)
	}
	env = setEnv(env, "TMPDIR", p.Tmp)
	second := reaped(&env)
	// The network namespace is made ready once, by the first launcher
	// (outside any confinement), before the server starts.
	if p.Netns && !second {
		if err := p.netns(); err != nil {
			return err
		}
	}
	if err := closeInherited(); err != nil {
		return err
	}
	if second {
		// Started by the launcher that reaps (reap_linux.go): confine
		// and exec in place.
	} else if parent, ok := watchParent(); ok {
		return p.startAndReap(parent) // reap_linux.go
	}
	if err := p.confine(); err != nil {
		return err
	}
	err := syscall.Exec(p.Argv[0], p.Argv, env)
	return fail("starting "+p.Argv[0], err)
}

// confine applies the plan to the calling thread (no_new_privs, the
// seccomp filters, the Landlock domain and the capabilities are the
// thread's until execve) and the resource limits to the process.
func (p *Plan) confine() error {
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := prctl(prSetNoNewPrivs, 1, 0); err != nil {
		return fail("setting no_new_privs", err)
	}
	for _, prog := range p.Filters {
		if err := loadFilter(prog); err != nil {
			return err
		}
	}
	if err := p.landlock(); err != nil {
		return err
	}
	// Last: the limits bound the launcher too; the server starts afresh
	// under them.
	return p.limit()
}

func setEnv(env []string, name, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if len(kv) <= len(name) || kv[:len(name)] != name || kv[len(name)] != '=' {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}

// mkdirAll makes dir and its missing parents, mode 0700: one mkdir(2)
// where the parent is there (the private HOME after the first start, each
// TMPDIR but the first of its server).
func mkdirAll(dir string) error {
	err := syscall.Mkdir(dir, 0o700)
	if err != nil && err != syscall.EEXIST && err != syscall.ENOENT {
		return err
	}
	for i := 1; err == syscall.ENOENT && i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		if e := syscall.Mkdir(dir[:i], 0o700); e != nil && e != syscall.EEXIST {
			return e
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return syscall.ENOTDIR
	}
	return nil
}

func prctl(option int, arg2, arg3 uintptr) error {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, uintptr(option), arg2, arg3, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// closeInherited marks every descriptor above stderr close-on-exec: the
// server gets its three pipes and nothing else. Go opens its own files
// close-on-exec, but colibri may have inherited others from whoever
// started it (an editor, a service manager), and a descriptor is a right
// Landlock does not take back: a server handed one reads the file it
// names however its rules read.
func closeInherited() error {
	const closeRangeCloexec = 1 << 2
	_, _, e := syscall.RawSyscall(sysCloseRange, 3, ^uintptr(0), closeRangeCloexec)
	if e == 0 {
		return nil
	}
	// Before Linux 5.11: one by one.
	fd, err := syscall.Open("/proc/self/fd", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fail("closing inherited descriptors: "+e.Error()+" (and listing them)", err)
	}
	defer syscall.Close(fd)
	buf := make([]byte, 8192)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err != nil {
			return fail("listing inherited descriptors", err)
		}
		if n <= 0 {
			return nil
		}
		_, _, names := syscall.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			if n, bad := decimal(name); !bad && n > 2 {
				syscall.CloseOnExec(int(n))
			}
		}
	}
}

// dropCapabilities empties the bounding, ambient and inheritable sets, so
// that a server started by a root colibri gets no capability at execve (it
// stays uid 0, but cannot raise its limits, override file permissions or
// signal what Landlock does not already forbid). A colibri without
// capabilities has nothing to drop.
func dropCapabilities() error {
	const (
		capVersion3         = 0x20080522
		prCapAmbient        = 47
		prCapAmbientClearAl = 4
	)
	hdr := struct {
		version uint32
		pid     int32
	}{version: capVersion3}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fail("reading capabilities", e)
	}
	if data[0].permitted == 0 && data[1].permitted == 0 && data[0].inheritable == 0 && data[1].inheritable == 0 {
		return nil
	}
	last := int64(63)
	if fd, err := syscall.Open("/proc/sys/kernel/cap_last_cap", syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err == nil {
		var b [16]byte
		n, _ := syscall.Read(fd, b[:])
		syscall.Close(fd)
		s := string(b[:max(n, 0)])
		for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
			s = s[:len(s)-1]
		}
		if v, bad := decimal(s); !bad && v < 64 {
			last = v
		}
	}
	for c := int64(0); c <= last; c++ {
		if err := prctl(syscall.PR_CAPBSET_DROP, uintptr(c), 0); err != nil && err != syscall.EINVAL {
			return fail("dropping capability "+itoa(c)+" from the bounding set", err)
		}
	}
	if err := prctl(prCapAmbient, prCapAmbientClearAl, 0); err != nil && err != syscall.EINVAL {
		return fail("clearing ambient capabilities", err)
	}
	data[0].inheritable, data[1].inheritable = 0, 0
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fail("clearing inheritable capabilities", e)
	}
	return nil
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}

// loadFilter loads one seccomp program (colibri assembled it:
// internal/sandbox).
func loadFilter(prog []Insn) error {
	const seccompModeFilter = 2
	if len(prog) == 0 || len(prog) > 4096 {
		return planError("a seccomp program of " + itoa(int64(len(prog))) + " instructions")
	}
	filter := make([]syscall.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = syscall.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := syscall.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := prctl(syscall.PR_SET_SECCOMP, seccompModeFilter, uintptr(unsafe.Pointer(&fprog))); err != nil {
		return fail("loading the seccomp filter", err)
	}
	return nil
}

// landlock enforces the filesystem rules (everything not granted is
// denied), the network rules and the scoping the ruleset handles.
func (p *Plan) landlock() error {
	if p.Ruleset == [3]uint64{} {
		return nil
	}
	attr := p.Ruleset // handled_access_fs, handled_access_net, scoped
	rfd, _, e := syscall.RawSyscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return fail("creating the Landlock ruleset (ABI "+itoa(int64(p.ABI))+")", e)
	}
	defer syscall.Close(int(rfd))
	kinds := [NumKinds][]string{
		KindRead:   p.Read,
		KindDevice: p.Devices,
		KindWrite:  append(append([]string{p.Tmp}, p.Write...), p.Home),
		// Its own /proc/PID (the pid stays across execve): /proc/self
		// works; no other process's /proc entry, colibri's environ
		// included.
		KindProc: {"/proc/self"},
		KindUnix: p.Unix,
	}
	for kind, paths := range kinds {
		for _, path := range paths {
			if err := addRule(int(rfd), path, p.Rights[kind]); err != nil {
				return err
			}
		}
	}
	if p.Port > 0 && p.Ruleset[1]&landlockConnectTCP != 0 {
		const ruleNetPort = 2
		attr := struct { // struct landlock_net_port_attr, packed: 16 bytes
			allowed uint64
			port    uint64
		}{allowed: landlockConnectTCP, port: uint64(p.Port)}
		if _, _, e := syscall.RawSyscall6(sysLandlockAddRule, rfd, ruleNetPort, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); e != 0 {
			return fail("granting TCP port "+itoa(p.Port), e)
		}
	}
	if _, _, e := syscall.RawSyscall(sysLandlockRestrictSelf, rfd, 0, 0); e != 0 {
		return fail("enforcing the Landlock ruleset (ABI "+itoa(int64(p.ABI))+")", e)
	}
	return nil
}

// addRule grants rights (on a file, on a folder) beneath path. A path that
// cannot be opened (gone since colibri checked) grants nothing.
func addRule(rfd int, path string, rights [2]uint64) error {
	if path == "" {
		return nil
	}
	fd, err := syscall.Open(path, oPath|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fail("granting "+path, err)
	}
	access := rights[0]
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		access = rights[1]
	}
	if access == 0 {
		return nil
	}
	const rulePathBeneath = 1
	attr := struct { // struct landlock_path_beneath_attr, packed: 12 bytes
		allowed uint64
		parent  int32
		_       int32
	}{allowed: access, parent: int32(fd)}
	if _, _, e := syscall.RawSyscall6(sysLandlockAddRule, uintptr(rfd), rulePathBeneath, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); e != 0 {
		return fail("granting "+path, e)
	}
	return nil
}

// limit sets the resource limits: no core dumps, and the plan's CPU time,
// descriptors and memory. RLIMIT_DATA bounds a process's private writable memory (heap,
// brk, anonymous writable mappings) but not the address space it merely
// reserves: V8 and the Go runtime reserve gigabytes they never touch, and
// fail to start under RLIMIT_AS, while RLIMIT_DATA lets them start and
// stops them when they really allocate (measured, docs/security.md).
func (p *Plan) limit() error {
	set := func(what string, res int, soft, hard uint64) error {
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: soft, Max: hard}); err != nil {
			return fail("setting "+what, err)
		}
		return nil
	}
	if err := set("RLIMIT_CORE", syscall.RLIMIT_CORE, 0, 0); err != nil {
		return err
	}
	if p.CPUSeconds > 0 {
		// SIGXCPU at the soft limit ends the process (its default action);
		// SIGKILL a second later ends one that catches it.
		s := uint64(p.CPUSeconds)
		if err := set("RLIMIT_CPU", syscall.RLIMIT_CPU, s, s+1); err != nil {
			return err
		}
	}
	if p.OpenFiles > 0 {
		// Descriptors, and with them the kernel's socket buffers, which
		// RLIMIT_DATA does not count: each Unix socket pair may hold
		// hundreds of KiB in the kernel (docs/security.md).
		n := uint64(p.OpenFiles)
		if err := set("RLIMIT_NOFILE", syscall.RLIMIT_NOFILE, n, n); err != nil {
			return err
		}
	}
	if p.MemoryMB > 0 {
		b := uint64(p.MemoryMB) << 20
		if err := set("RLIMIT_DATA", syscall.RLIMIT_DATA, b, b); err != nil {
			return err
		}
	}
	return nil
}
