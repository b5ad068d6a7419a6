package sandbox

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/colibri-mcp/colibri-mcp/internal/sandbox/early"
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

// enforcement is what the launcher enforces for p, ready made: the Landlock
// ruleset's handled access and each kind of path's rights, and the seccomp
// programs; or, when they cannot be made, a failure the launcher reports
// rather than start anything. It is the same for every plan of the same
// ABI, network and memory bound, and made once for each.
func (p *Plan) enforcement() []string {
	key := enforcementKey{abi: p.abi(), net: p.Net, mem: p.MemoryMB > 0, unixOpen: p.UnixOpen, egress: p.ProxyPort > 0}
	if v, ok := enforcements.Load(key); ok {
		return v.([]string)
	}
	var out []string
	progs, err := key.filters()
	if err != nil {
		out = []string{early.KeyFail + "=" + err.Error()}
	} else {
		out = key.landlock()
		for _, prog := range progs {
			out = append(out, early.KeyFilter+"="+early.EncodeFilter(prog))
		}
	}
	enforcements.Store(key, out)
	return out
}

// enforcementKey is what the enforcement depends on.
type enforcementKey struct {
	abi                        int
	net, mem, unixOpen, egress bool
}

var enforcements sync.Map // enforcementKey → []string

// filters are the seccomp programs, the launcher loads in order: system calls of another
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
// (IPv4, IPv6, packet, vsock…); below Landlock ABI 9, which is the first to
// rule on connect(2) and sendmsg(2) to a pathname Unix socket, whatever net
// says, every Unix socket (socket(AF_UNIX) to reach the D-Bus session bus,
// whose systemd runs any command unconfined, the ssh-agent, or
// docker.sock), and with either of those io_uring, whose operations open
// sockets without the socket(2) system call; and always a Unix datagram
// pair, which sendto(2) may address to any path (stream and seqpacket
// pairs, which runtimes use for their children, stay); unless best_effort
// opened every Unix socket.
func (k enforcementKey) filters() ([][]early.Insn, error) {
	arch, err := foreignArchFilter()
	if err != nil {
		return nil, err
	}
	groups := []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{
		{Name: "prlimit64", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: 0}}},
	}}, {Action: seccomp.ActionErrno, Names: slices.Concat(sysvIPC, keyrings)}}
	if k.mem {
		// RLIMIT_DATA counts private memory only: shared anonymous memory
		// and a memfd, mapped shared, would hold any amount past it.
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno,
			Names: []string{"memfd_create", "memfd_secret"},
			NamesWithCondtions: []seccomp.NameWithConditions{{Name: "mmap", Conditions: seccomp.ArgumentConditions{
				{Argument: 3, Operation: seccomp.BitsSet, Value: unix.MAP_SHARED},
				{Argument: 3, Operation: seccomp.BitsSet, Value: unix.MAP_ANONYMOUS}}}}})
	}
	// Below Landlock ABI 9 the kernel cannot tell one Unix socket's path
	// from another's: every Unix socket is refused but a connected stream
	// or seqpacket pair, unless best_effort opened them all.
	closeUnix := k.abi < unixRulesABI && !k.unixOpen
	var deny []seccomp.NameWithConditions
	if !k.unixOpen {
		deny = append(deny, seccomp.NameWithConditions{Name: "socketpair", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX},
			// SOCK_DGRAM, and SOCK_RAW, which is a datagram socket for
			// AF_UNIX; SOCK_STREAM and SOCK_SEQPACKET lack the bit.
			{Argument: 1, Operation: seccomp.BitsSet, Value: unix.SOCK_DGRAM}}})
	}
	if !k.net || closeUnix {
		var sockets seccomp.ArgumentConditions
		if !k.net {
			// Every family but those named here: IPv4, IPv6 and packet
			// sockets, and AF_VSOCK (a virtual machine's way to its host:
			// WSL2's, Firecracker's), AF_TIPC, AF_RDS, Bluetooth, CAN…
			// Netlink stays: getifaddrs(3) and getaddrinfo(3) use it, and it
			// reaches nothing beyond this machine's kernel.
			sockets = seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_NETLINK}}
			if !closeUnix {
				sockets = append(sockets, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX})
			}
		} else {
			sockets = seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX}}
		}
		deny = append(deny, seccomp.NameWithConditions{Name: "socket", Conditions: sockets})
	}
	if k.egress {
		// A "net" list: TCP to the proxy's port alone (Landlock), so no
		// datagram or raw IPv4 and IPv6 socket (UDP is Landlock's from ABI
		// 10 only), and no family but those.
		// Nor a stream socket that is not TCP (MPTCP, which falls back to
		// TCP with any peer) or an SCTP or DCCP one (SOCK_SEQPACKET,
		// SOCK_RDM, SOCK_DCCP: the 4 bit): Landlock's rule is TCP's alone,
		// and these would connect anywhere.
		for _, fam := range []uint64{unix.AF_INET, unix.AF_INET6} {
			deny = append(deny, seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
				{Argument: 0, Operation: seccomp.Equal, Value: fam},
				{Argument: 1, Operation: seccomp.BitsSet, Value: unix.SOCK_DGRAM}}},
				seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
					{Argument: 0, Operation: seccomp.Equal, Value: fam},
					{Argument: 1, Operation: seccomp.BitsSet, Value: unix.SOCK_RDM}}},
				seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
					{Argument: 0, Operation: seccomp.Equal, Value: fam},
					{Argument: 2, Operation: seccomp.NotEqual, Value: 0},
					{Argument: 2, Operation: seccomp.NotEqual, Value: unix.IPPROTO_TCP}}})
		}
		others := seccomp.ArgumentConditions{}
		for _, fam := range []uint64{unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK, unix.AF_UNIX} {
			others = append(others, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: fam})
		}
		deny = append(deny, seccomp.NameWithConditions{Name: "socket", Conditions: others})
	}
	if !k.net || closeUnix || k.egress {
		// io_uring's operations open sockets without socket(2).
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno, Names: []string{"io_uring_setup"}})
	}
	if len(deny) > 0 {
		// The kernel reads socket(2)'s and socketpair(2)'s family as an
		// int, the filter compares the whole 64-bit register: AF_UNIX with
		// bit 32 set would pass "family == AF_UNIX" unrefused, and be a
		// Unix socket all the same. No caller sets those bits.
		for _, name := range []string{"socket", "socketpair"} {
			deny = append(deny, seccomp.NameWithConditions{Name: name, Conditions: seccomp.ArgumentConditions{
				{Argument: 0, Operation: seccomp.GreaterThan, Value: 0xffffffff}}})
		}
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: deny})
	}
	policy := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: knownOnly(groups)}
	insts, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("assembling the seccomp filter: %w", err)
	}
	main, err := assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("assembling the seccomp filter: %w", err)
	}
	if arch == nil {
		return [][]early.Insn{main}, nil
	}
	return [][]early.Insn{arch, main}, nil
}

// assemble turns BPF instructions into the launcher's.
func assemble(insts []bpf.Instruction) ([]early.Insn, error) {
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, err
	}
	prog := make([]early.Insn, len(raw))
	for i, in := range raw {
		prog[i] = early.Insn{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	return prog, nil
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

// foreignArchFilter makes every system call of another architecture fail
// with EPERM; nil where the architecture is not known here.
func foreignArchFilter() ([]early.Insn, error) {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return nil, nil
	}
	prog, err := assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	})
	if err != nil {
		return nil, fmt.Errorf("assembling the architecture filter: %w", err)
	}
	return prog, nil
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
func (p *Plan) abi() int { return max(0, min(p.ABI, DetectABI(), len(configs)-1)) }

// configs are go-landlock's presets by ABI.
var configs = []landlock.Config{{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// landlock is the Landlock ruleset: the filesystem rules (everything not
// granted is denied), TCP (denied entirely with net false) and the scoping
// of signals and abstract Unix sockets, so that a server cannot signal,
// ptrace or reach over an abstract socket any process outside its own
// Landlock domain (colibri, other servers, the user's other processes).
// The launcher opens each granted path and grants a folder's rights or a
// file's as it finds it; the private TMPDIR and HOME get the written
// paths' rights, and the process's own /proc/PID (the pid stays across
// execve) a read-only view: /proc/self works, no other process's /proc
// entry, colibri's environ included.
func (k enforcementKey) landlock() []string {
	if k.abi <= 0 {
		return nil
	}
	base := configs[k.abi]
	fs, net := uint64(base.HandledAccessFS), uint64(0)
	if !k.net || k.egress {
		// No rule: no TCP (or UDP, from ABI 10) at all; with a "net" list
		// the launcher adds the one rule, connect to the proxy's port.
		net = uint64(base.HandledAccessNet)
	}
	hex := func(v uint64) string { return strconv.FormatUint(v, 16) }
	out := []string{early.KeyRuleset + "=" + hex(fs) + "," + hex(net) + "," + hex(uint64(base.Scoped))}
	rights := [early.NumKinds][2]uint64{
		early.KindRead:   {fileRead, dirRead},
		early.KindWrite:  {fileWrite | llsys.AccessFSResolveUnix, dirWrite},
		early.KindDevice: {fileWrite, fileWrite},
		early.KindProc:   {fileRead &^ llsys.AccessFSExecute, dirRead &^ llsys.AccessFSExecute},
		early.KindUnix:   {llsys.AccessFSResolveUnix, llsys.AccessFSResolveUnix},
	}
	for kind, r := range rights {
		out = append(out, early.KeyRights+"="+early.KindKeys[kind]+","+hex(r[0]&fs)+","+hex(r[1]&fs))
	}
	return out
}
