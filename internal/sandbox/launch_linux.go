package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// DetectABI is the Landlock ABI of the running kernel; 0 when it has none
// (or Landlock is disabled).
func DetectABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// Launch is colibri run as the launcher: it confines itself as the plan in
// args says and execve(2)s the server. It returns only on failure, after
// writing the reason to stderr, with the exit status to use (the caller
// exits; colibri's handshake error then shows the reason as the server's
// stderr).
func Launch(args []string) int {
	p, argv, err := parseArgv(args)
	if err == nil {
		err = p.apply(argv)
	}
	fmt.Fprintf(os.Stderr, "colibri sandbox: %v\n", err)
	return 126
}

// apply confines the calling process and replaces it with argv. Everything
// happens on one locked OS thread: no_new_privs, the seccomp filter and the
// Landlock domain are per thread until execve, after which that thread is
// the whole process.
func (p *Plan) apply(argv []string) error {
	runtime.LockOSThread() // never unlocked: this thread becomes the server
	env := os.Environ()
	if p.Home != "" {
		if err := os.MkdirAll(p.Home, 0o700); err != nil {
			return fmt.Errorf("making the private HOME: %w", err)
		}
		env = setEnv(env, "HOME", p.Home)
	}
	tmp := p.Tmp
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("making the private TMPDIR: %w", err)
	}
	env = setEnv(env, "TMPDIR", tmp)
	if err := closeInherited(); err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := p.filterSyscalls(); err != nil {
		return err
	}
	if err := p.landlock(tmp); err != nil {
		return err
	}
	// Last: the limits bound the launcher too, which is colibri's whole
	// binary with a heap of its own; the server starts afresh under them.
	if err := p.limit(); err != nil {
		return err
	}
	err := syscall.Exec(argv[0], argv, env)
	return fmt.Errorf("starting %s: %w", argv[0], err)
}

func setEnv(env []string, name, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}

// closeInherited marks every descriptor above stderr close-on-exec: the
// server gets its three pipes and nothing else. Go opens its own files
// close-on-exec, but colibri may have inherited others from whoever
// started it (an editor, a service manager), and a descriptor is a right
// Landlock does not take back: a server handed one reads the file it
// names however its rules read.
func closeInherited() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Before Linux 5.11: one by one.
	ents, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return fmt.Errorf("closing inherited descriptors: %w (and listing them: %v)", err, rerr)
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// limit sets the resource limits: no core dumps, and the plan's CPU time
// and memory. RLIMIT_DATA bounds a process's private writable memory (heap,
// brk, anonymous writable mappings) but not the address space it merely
// reserves: V8 and the Go runtime reserve gigabytes they never touch, and
// fail to start under RLIMIT_AS, while RLIMIT_DATA lets them start and
// stops them when they really allocate (measured, docs/security.md).
func (p *Plan) limit() error {
	set := func(what string, res int, soft, hard uint64) error {
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: soft, Max: hard}); err != nil {
			return fmt.Errorf("setting %s: %w", what, err)
		}
		return nil
	}
	if err := set("RLIMIT_CORE", unix.RLIMIT_CORE, 0, 0); err != nil {
		return err
	}
	if p.CPUSeconds > 0 {
		// SIGXCPU at the soft limit ends the process (its default action);
		// SIGKILL a second later ends one that catches it.
		s := uint64(p.CPUSeconds)
		if err := set("RLIMIT_CPU", unix.RLIMIT_CPU, s, s+1); err != nil {
			return err
		}
	}
	if p.MemoryMB > 0 {
		b := uint64(p.MemoryMB) << 20
		if err := set("RLIMIT_DATA", unix.RLIMIT_DATA, b, b); err != nil {
			return err
		}
	}
	return nil
}

// dropCapabilities empties the bounding, ambient and inheritable sets, so
// that a server started by a root colibri gets no capability at execve (it
// stays uid 0, but cannot raise its limits, override file permissions or
// signal what Landlock does not already forbid). A colibri without
// capabilities has nothing to drop.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	if data[0].Permitted == 0 && data[1].Permitted == 0 && data[0].Inheritable == 0 && data[1].Inheritable == 0 {
		return nil
	}
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clearing inheritable capabilities: %w", err)
	}
	return nil
}

// filterSyscalls loads the seccomp filters: system calls of another
// architecture (i386's int 0x80 on amd64, which a filter keyed on amd64's
// numbers would let through) fail always, and so does prlimit(2) on
// another process (the kernel lets a process of the same user lower
// colibri's limits, RLIMIT_CPU to one second ends it, and Landlock has no
// rule for it), and so does System V IPC (outside Landlock too: another
// process's shared memory segment is read by its id, an X client's
// MIT-SHM images, and a segment outlives its maker and every limit), and
// so do the kernel's keyrings (outside Landlock: the user's keyring holds
// Kerberos tickets and file system keys, readable by any process of the
// user); with max_memory_mb, shared anonymous memory and memfds, which
// RLIMIT_DATA does not count; with net false, so does every socket but a Netlink one
// (IPv4, IPv6, packet, vsock…), and io_uring, whose operations open sockets without the
// socket(2) system call; and below Landlock ABI 9, which is the first to
// rule on connect(2) and sendmsg(2) to a pathname Unix socket, every Unix
// socket but a connected pair (socket(AF_UNIX) to reach the D-Bus session
// bus, whose systemd runs any command unconfined, or docker.sock; a
// datagram pair, which sendto(2) may still address to any path).
func (p *Plan) filterSyscalls() error {
	if err := loadForeignArchFilter(); err != nil {
		return err
	}
	groups := []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{
		{Name: "prlimit64", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: 0}}},
	}}, {Action: seccomp.ActionErrno, Names: slices.Concat(sysvIPC, keyrings)}}
	if p.MemoryMB > 0 {
		// RLIMIT_DATA counts private memory only: shared anonymous memory
		// and a memfd, mapped shared, would hold any amount past it.
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno,
			Names: []string{"memfd_create", "memfd_secret"},
			NamesWithCondtions: []seccomp.NameWithConditions{{Name: "mmap", Conditions: seccomp.ArgumentConditions{
				{Argument: 3, Operation: seccomp.BitsSet, Value: unix.MAP_SHARED},
				{Argument: 3, Operation: seccomp.BitsSet, Value: unix.MAP_ANONYMOUS}}}}})
	}
	if !p.Net {
		var deny []seccomp.NameWithConditions
		// Every family but those named here: IPv4, IPv6 and packet
		// sockets, and AF_VSOCK (a virtual machine's way to its host:
		// WSL2's, Firecracker's), AF_TIPC, AF_RDS, Bluetooth, CAN…
		// Netlink stays: getifaddrs(3) and getaddrinfo(3) use it, and it
		// reaches nothing beyond this machine's kernel.
		keep := seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_NETLINK}}
		if p.abi() >= unixRulesABI {
			keep = append(keep, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX})
		} else {
			deny = append(deny, seccomp.NameWithConditions{Name: "socketpair", Conditions: seccomp.ArgumentConditions{
				{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX},
				// SOCK_DGRAM, and SOCK_RAW, which is a datagram socket for AF_UNIX.
				{Argument: 1, Operation: seccomp.BitsSet, Value: unix.SOCK_DGRAM}}})
		}
		deny = append(deny, seccomp.NameWithConditions{Name: "socket", Conditions: keep})
		groups = append(groups,
			seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: deny},
			seccomp.SyscallGroup{Action: seccomp.ActionErrno, Names: []string{"io_uring_setup"}})
	}
	f := seccomp.Filter{
		NoNewPrivs: true,
		Policy:     seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: knownOnly(groups)},
	}
	if err := seccomp.LoadFilter(f); err != nil {
		return fmt.Errorf("loading the seccomp filter: %w", err)
	}
	return nil
}

// knownOnly drops from groups the calls the running architecture does not
// have (memfd_secret on 32-bit ARM, mmap where it is mmap2): the seccomp
// library refuses a whole filter that names one, and a call that does not
// exist needs no rule.
func knownOnly(groups []seccomp.SyscallGroup) []seccomp.SyscallGroup {
	info, err := arch.GetInfo("")
	if err != nil {
		return groups // the library will say so
	}
	out := make([]seccomp.SyscallGroup, 0, len(groups))
	for _, g := range groups {
		g.Names = slices.DeleteFunc(slices.Clone(g.Names), func(n string) bool { _, ok := info.SyscallNames[n]; return !ok })
		g.NamesWithCondtions = slices.DeleteFunc(slices.Clone(g.NamesWithCondtions), func(n seccomp.NameWithConditions) bool {
			_, ok := info.SyscallNames[n.Name]
			return !ok
		})
		if len(g.Names)+len(g.NamesWithCondtions) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// sysvIPC are System V IPC's calls, as the seccomp library names them.
var sysvIPC = []string{"shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl",
	"semget", "semop", "semtimedop", "semctl"}

// keyrings are the calls of the kernel's key management.
var keyrings = []string{"keyctl", "add_key", "request_key"}

// auditArch is the seccomp architecture of the running binary.
var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64, "386": unix.AUDIT_ARCH_I386,
	"arm": unix.AUDIT_ARCH_ARM, "riscv64": unix.AUDIT_ARCH_RISCV64, "ppc64le": unix.AUDIT_ARCH_PPC64LE,
	"s390x": unix.AUDIT_ARCH_S390X, "loong64": unix.AUDIT_ARCH_LOONGARCH64,
}

// loadForeignArchFilter makes every system call of another architecture
// fail with EPERM.
func loadForeignArchFilter() error {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return nil
	}
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	})
	if err != nil {
		return fmt.Errorf("assembling the architecture filter: %w", err)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("loading the architecture filter: %w", err)
	}
	return nil
}

// Landlock access rights granted to each kind of path.
const (
	fileRead  = llsys.AccessFSReadFile | llsys.AccessFSExecute
	dirRead   = fileRead | llsys.AccessFSReadDir
	fileWrite = fileRead | llsys.AccessFSWriteFile | llsys.AccessFSTruncate
	dirWrite  = dirRead | llsys.AccessFSWriteFile | llsys.AccessFSTruncate | llsys.AccessFSRemoveDir |
		llsys.AccessFSRemoveFile | llsys.AccessFSMakeChar | llsys.AccessFSMakeDir | llsys.AccessFSMakeReg |
		llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo | llsys.AccessFSMakeBlock | llsys.AccessFSMakeSym |
		llsys.AccessFSRefer | llsys.AccessFSResolveUnix
)

// abi is the Landlock ABI the launcher enforces: the plan's, at most the
// kernel's, at most the newest go-landlock knows.
func (p *Plan) abi() int { return min(p.ABI, DetectABI(), len(configs)-1) }

// unixRulesABI is the first Landlock ABI that rules on reaching a pathname
// Unix socket (connect(2), sendmsg(2)): below it, net false refuses Unix
// sockets through seccomp instead.
const unixRulesABI = 9

// configs are go-landlock's presets by ABI.
var configs = []landlock.Config{{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// landlock enforces the filesystem rules (everything not granted is
// denied), TCP (denied entirely with net false) and the scoping of signals
// and abstract Unix sockets: a server cannot signal, ptrace or reach over
// an abstract socket any process outside its own Landlock domain (colibri,
// other servers, the user's other processes).
func (p *Plan) landlock(tmp string) error {
	abi := p.abi()
	if abi <= 0 {
		return nil
	}
	base := configs[abi]
	cfg := landlock.Config{HandledAccessFS: base.HandledAccessFS, Scoped: base.Scoped}
	if !p.Net {
		cfg.HandledAccessNet = base.HandledAccessNet // no rule: no TCP (or UDP, from ABI 10) at all
	}
	var rules []landlock.Rule
	add := func(paths []string, file, dir landlock.AccessFSSet) {
		for _, path := range paths {
			st, err := os.Stat(path)
			if err != nil {
				continue // gone since colibri checked: nothing to grant
			}
			rights := dir
			if !st.IsDir() {
				rights = file
			}
			rules = append(rules, landlock.PathAccess(rights&cfg.HandledAccessFS, path))
		}
	}
	add(p.Read, fileRead, dirRead)
	add(p.Devices, fileWrite, fileWrite)
	write := append([]string{tmp}, p.Write...)
	if p.Home != "" {
		write = append(write, p.Home)
	}
	add(write, fileWrite, dirWrite)
	// Its own /proc/PID (the pid stays across execve): /proc/self works;
	// no other process's /proc entry, colibri's environ included.
	add([]string{"/proc/" + strconv.Itoa(os.Getpid())}, fileRead&^llsys.AccessFSExecute, dirRead&^llsys.AccessFSExecute)
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("building the Landlock ruleset (ABI %d): %w", abi, err)
	}
	if fd < 0 {
		return nil
	}
	defer unix.Close(fd)
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("enforcing the Landlock ruleset (ABI %d): %w", abi, err)
	}
	return nil
}
