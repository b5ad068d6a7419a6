// Package early is the sandbox launcher: colibri's own binary re-executed
// as `colibri-mcp __colibri_sandbox_launcher PLAN… -- COMMAND ARGS…`
// confines itself as the plan says (no_new_privs, an empty capability set,
// seccomp filters, a Landlock domain, resource limits) and execve(2)s the
// command. Started by colibri, it first becomes its server's reaper
// (reap_linux.go): it starts itself again to do the above, and stays to
// end the server's tree when the server or colibri ends.
//
// It acts from its init, and it imports nothing but syscall, unsafe and
// runtime. Go initializes a program's packages in import-path order as
// their dependencies allow, so a package that needs nothing is initialized
// among the first: the launcher runs ~15 package inits into its start
// rather than ~100 (colibri's MCP, schema, metrics and TOML packages, the
// seccomp library's tables). For the same reason it is handed everything
// ready (internal/sandbox prepares it in colibri): the Landlock access
// rights of each kind of path and the seccomp programs already assembled;
// it only makes the system calls. The plan's format is Parse's.
//
// The arguments come from /proc/self/cmdline (package os, which holds
// os.Args, would bring its dependencies ahead of it); where that cannot be
// read, internal/sandbox calls Run with os.Args from its own init, later.
package early

// Marker is argv[1] of colibri run as the launcher. It is not a command of
// the CLI: nothing but colibri itself starts it.
const Marker = "__colibri_sandbox_launcher"

// End ends the plan's arguments: the command follows.
const End = "--"

// Plan is what the launcher applies, as Parse reads it from its argv.
type Plan struct {
	Tmp, Home            string
	Read, Write, Devices []string
	// Unix are the pathname Unix sockets (or folders of them) the server
	// may connect to (from Landlock ABI 9).
	Unix []string
	Net  bool
	// Port is the one TCP port connect(2) may reach (the egress proxy's),
	// where the ruleset handles TCP.
	Port int64
	// Netns: the launcher runs in a network namespace of its own, which
	// it prepares (loopback, a listener on 127.0.0.1:Port, the forwarder
	// to the egress proxy's ProxySock).
	Netns                bool
	ProxySock            string
	MemoryMB, CPUSeconds int64
	OpenFiles            int64
	ABI                  int
	// Ruleset is the Landlock ruleset's handled access: filesystem,
	// network, scoped. All zero: no Landlock.
	Ruleset [3]uint64
	// Rights are the access rights granted to each kind of path, for a
	// file and for a folder.
	Rights [NumKinds][2]uint64
	// Filters are the seccomp programs, loaded in order.
	Filters [][]Insn
	// Fail, when not empty, is why colibri could not prepare the plan: the
	// launcher refuses to start anything.
	Fail string
	// Argv is the command, Argv[0] an absolute path.
	Argv []string
}

// The kinds of granted paths.
const (
	KindRead   = iota // read and execute
	KindWrite         // also write (the private TMPDIR and HOME too)
	KindDevice        // a character device read and written
	KindProc          // the process's own /proc/PID
	KindUnix          // a pathname Unix socket (or a folder of them) reached
	NumKinds
)

// Insn is one classic BPF instruction (struct sock_filter).
type Insn struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// The plan's keys: each argument is KEY=VALUE.
const (
	KeyTmp     = "tmp"    // the private TMPDIR, made 0700
	KeyHome    = "home"   // the private HOME, made 0700
	KeyRead    = "r"      // a path granted read (and execute)
	KeyWrite   = "w"      // a path granted write
	KeyDevice  = "d"      // a device granted read and write
	KeyUnix    = "u"      // a pathname Unix socket (or a folder of them) granted connect
	KeyNet     = "net"    // "1": the plan allows the network (informative: the rules say it)
	KeyPort    = "port"   // the TCP port connect(2) may reach
	KeyNetns   = "netns"  // the egress proxy's Unix socket: a network namespace of its own, forwarded to it
	KeyMem     = "mem"    // RLIMIT_DATA in MiB
	KeyCPU     = "cpu"    // RLIMIT_CPU in seconds
	KeyNofile  = "nofile" // RLIMIT_NOFILE, soft and hard
	KeyABI     = "abi"    // the Landlock ABI colibri found (informative)
	KeyRuleset = "ll"     // HEX,HEX,HEX: the ruleset's handled access
	KeyRights  = "rights" // KIND,HEX,HEX: a kind's rights on a file and a folder
	KeyFilter  = "bpf"    // a seccomp program, 16 hex digits an instruction
	KeyFail    = "fail"   // why colibri could not prepare the plan
)

// KindKeys name the kinds in KeyRights.
var KindKeys = [NumKinds]string{KindRead: "r", KindWrite: "w", KindDevice: "d", KindProc: "p", KindUnix: "u"}

// IsLauncher reports whether args are those of colibri run as the launcher.
func IsLauncher(args []string) bool { return len(args) > 1 && args[1] == Marker }

type planError string

func (e planError) Error() string { return string(e) }

// Parse reads the launcher's argv: the marker, the plan's arguments, End,
// then the command.
func Parse(args []string) (*Plan, error) {
	if !IsLauncher(args) {
		return nil, planError("usage: " + Marker + " PLAN… " + End + " COMMAND [ARGS…] (colibri starts this itself)")
	}
	p := &Plan{}
	for i, a := range args[2:] {
		if a == End {
			p.Argv = args[2+i+1:]
			if len(p.Argv) == 0 || p.Argv[0] == "" || p.Argv[0][0] != '/' {
				return nil, planError("the command is missing or not an absolute path")
			}
			return p, nil
		}
		key, val, ok := cut(a, '=')
		if !ok {
			return nil, planError("a plan argument without '=': " + a)
		}
		var bad bool
		switch key {
		case KeyTmp:
			p.Tmp = val
		case KeyHome:
			p.Home = val
		case KeyRead:
			p.Read = append(p.Read, val)
		case KeyWrite:
			p.Write = append(p.Write, val)
		case KeyDevice:
			p.Devices = append(p.Devices, val)
		case KeyUnix:
			p.Unix = append(p.Unix, val)
		case KeyNet:
			p.Net = val == "1"
		case KeyNetns:
			p.Netns, p.ProxySock = true, val
			bad = val == "" || val[0] != '/'
		case KeyPort:
			p.Port, bad = decimal(val)
			bad = bad || p.Port < 1 || p.Port > 65535
		case KeyMem:
			p.MemoryMB, bad = decimal(val)
		case KeyCPU:
			p.CPUSeconds, bad = decimal(val)
		case KeyNofile:
			p.OpenFiles, bad = decimal(val)
		case KeyABI:
			var n int64
			n, bad = decimal(val)
			p.ABI = int(n)
		case KeyRuleset:
			bad = hexList(val, p.Ruleset[:])
		case KeyRights:
			kind, rest, _ := cut(val, ',')
			k := -1
			for i, name := range KindKeys {
				if name == kind {
					k = i
				}
			}
			bad = k < 0 || hexList(rest, p.Rights[k][:])
		case KeyFilter:
			var prog []Insn
			prog, bad = decodeFilter(val)
			p.Filters = append(p.Filters, prog)
		case KeyFail:
			p.Fail = val
		default:
			bad = true
		}
		if bad {
			return nil, planError("a plan argument it cannot read: " + a)
		}
	}
	return nil, planError("the plan has no " + End + " before the command")
}

func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// decimal reads a non-negative decimal number; bad is true when s is not one.
func decimal(s string) (n int64, bad bool) {
	if s == "" || len(s) > 18 {
		return 0, true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, true
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, false
}

// hexList reads exactly len(out) comma-separated hexadecimal numbers.
func hexList(s string, out []uint64) (bad bool) {
	for i := range out {
		var field string
		field, s, _ = cut(s, ',')
		if field == "" || len(field) > 16 {
			return true
		}
		v, ok := hexValue(field)
		if !ok {
			return true
		}
		out[i] = v
	}
	return s != ""
}

func hexValue(s string) (uint64, bool) {
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}

// decodeFilter reads a program: per instruction, code (4 hex digits), jt
// and jf (2 each) and k (8).
func decodeFilter(s string) (prog []Insn, bad bool) {
	if s == "" || len(s)%16 != 0 {
		return nil, true
	}
	for ; s != ""; s = s[16:] {
		code, ok1 := hexValue(s[0:4])
		jt, ok2 := hexValue(s[4:6])
		jf, ok3 := hexValue(s[6:8])
		k, ok4 := hexValue(s[8:16])
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil, true
		}
		prog = append(prog, Insn{Code: uint16(code), Jt: uint8(jt), Jf: uint8(jf), K: uint32(k)})
	}
	return prog, false
}

// EncodeFilter writes a program as decodeFilter reads it.
func EncodeFilter(prog []Insn) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 0, 16*len(prog))
	put := func(v uint64, n int) {
		for i := n - 1; i >= 0; i-- {
			b = append(b, digits[v>>(4*uint(i))&0xf])
		}
	}
	for _, in := range prog {
		put(uint64(in.Code), 4)
		put(uint64(in.Jt), 2)
		put(uint64(in.Jf), 2)
		put(uint64(in.K), 8)
	}
	return string(b)
}
