package early

import (
	"syscall"
	"unsafe"
)

// The launcher as its server's reaper. colibri kills a hosted server's
// whole tree at teardown and reaps the orphans it adopts, but nothing of
// colibri acts once it is killed with SIGKILL: its Pdeathsig ends the
// server, and a daemon the server double-forked (reparented to colibri,
// then to init) would live on. So the launcher colibri starts stays, a
// process of colibri's own user that no sandbox confines: it becomes the
// subreaper of the server's tree, starts a second launcher (its own
// binary again, marked by reapedVar) that confines itself and execs the
// server in place (so that the server's own /proc/self is the one its
// Landlock domain grants), and watches its parent through a pidfd (a
// parent-death signal that Go's runtime would not hand on: the inherited
// SIGKILL one is cleared once the pidfd watches). The server's domain
// does not hold the reaper: it can neither signal nor trace it (and the
// reaper is not dumpable). When the server exits, the reaper ends what it
// left (its adopted orphans, every generation) and exits as the server
// did; when colibri dies, it ends the whole tree. The pid colibri sees is
// the reaper's: KillTree, the group kill and colibri's own reaping reach
// the server through it.

// reapedVar marks the environment of the launcher the reaper starts; the
// second launcher takes it out before the server sees it.
const reapedVar = "COLIBRI_SANDBOX_REAPED"

// launcherArgs are the launcher's arguments, which the reaper starts
// again.
var launcherArgs []string

// reaped reports whether this launcher was started by the reaper, and
// takes the mark out of env.
func reaped(env *[]string) bool {
	for i, kv := range *env {
		if kv == reapedVar+"=1" {
			*env = append((*env)[:i:i], (*env)[i+1:]...)
			return true
		}
	}
	return false
}

const (
	prSetPdeathsig      = 1
	prSetDumpable       = 4
	prSetChildSubreaper = 36
	pollIn              = 0x1
)

// watchParent opens a pidfd of the launcher's parent (colibri), readable
// once it exits; ok is false where the kernel has none (before Linux 5.3):
// the launcher then execs the server in place, and Pdeathsig is all there
// is.
func watchParent() (fd int, ok bool) {
	ppid := syscall.Getppid()
	r, _, e := syscall.RawSyscall(sysPidfdOpen, uintptr(ppid), 0, 0)
	if e != 0 {
		return 0, false
	}
	return int(r), true
}

// startAndReap starts the second launcher, which confines itself and
// execs the server, and reaps the tree until the server exits or colibri
// does. It returns only when nothing could be started.
func (p *Plan) startAndReap(parent int) error {
	if err := prctl(prSetChildSubreaper, 1, 0); err != nil {
		return fail("becoming the server's reaper", err)
	}
	env := append(syscall.Environ(), reapedVar+"=1")
	pid, err := syscall.ForkExec("/proc/self/exe", launcherArgs, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}})
	if err != nil {
		return fail("starting the confined launcher", err)
	}
	s := struct{ pid int }{pid}
	// colibri's parent-death signal (SIGKILL) would end the launcher
	// before it could end the tree: the pidfd watches colibri instead.
	prctl(prSetPdeathsig, 0, 0)
	prctl(prSetDumpable, 0, 0) // not to be read or traced by the server's user
	// The server holds its stdin and stdout; colibri reads the end of its
	// stdout when the server's tree closes it, not the launcher.
	syscall.Close(0)
	syscall.Close(1)
	child, _, e := syscall.RawSyscall(sysPidfdOpen, uintptr(s.pid), 0, 0)
	if e != 0 {
		// Cannot happen: the server is an unreaped child. Wait for it.
		var ws syscall.WaitStatus
		syscall.Wait4(s.pid, &ws, 0, nil)
		endTree()
		exitAs(ws)
	}
	fds := [2]struct {
		fd             int32
		events, revent int16
	}{{fd: int32(parent), events: pollIn}, {fd: int32(child), events: pollIn}}
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 2, 0, 0, 0, 0)
		if e != 0 && e != syscall.EINTR {
			break // cannot watch: treat as the end
		}
		if fds[0].revent != 0 || fds[1].revent != 0 {
			break
		}
	}
	if fds[1].revent == 0 {
		// colibri is gone: the server goes too.
		syscall.Kill(s.pid, syscall.SIGKILL)
		syscall.Kill(-s.pid, syscall.SIGKILL)
	}
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(s.pid, &ws, 0, nil); err != syscall.EINTR {
			break
		}
	}
	endTree()
	exitAs(ws)
	return nil
}

// endTree kills and reaps every process left under the launcher, its
// subreaper: each child (an orphan the kernel handed it) and the group it
// leads, a generation a round, since a killed child's children become the
// launcher's in turn.
func endTree() {
	for range 1000 {
		kids := children()
		if len(kids) == 0 {
			return
		}
		for _, k := range kids {
			syscall.Kill(-k, syscall.SIGKILL) // ESRCH unless it leads a group
			syscall.Kill(k, syscall.SIGKILL)
		}
		for range kids {
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(-1, &ws, 0, nil); err == syscall.ECHILD {
				break
			}
		}
	}
}

// children lists the launcher's children from the process table: every
// /proc/PID/stat whose parent is this process.
func children() []int {
	self := syscall.Getpid()
	fd, err := syscall.Open("/proc", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var out []int
	buf := make([]byte, 8192)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err != nil || n <= 0 {
			return out
		}
		_, _, names := syscall.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			pid, bad := decimal(name)
			if bad || int(pid) == self || parentOf(name) != self {
				continue
			}
			out = append(out, int(pid))
		}
	}
}

// parentOf reads the parent pid in /proc/PID/stat ("PID (COMM) STATE PPID
// …", COMM may hold spaces and parentheses); -1 when it cannot.
func parentOf(pid string) int {
	fd, err := syscall.Open("/proc/"+pid+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	defer syscall.Close(fd)
	var b [512]byte
	n, _ := syscall.Read(fd, b[:])
	s := b[:max(n, 0)]
	i := len(s) - 1
	for i >= 0 && s[i] != ')' {
		i--
	}
	// ") S PPID"
	if i < 0 || i+4 >= len(s) {
		return -1
	}
	j := i + 4
	k := j
	for k < len(s) && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	ppid, bad := decimal(string(s[j:k]))
	if bad {
		return -1
	}
	return int(ppid)
}

// exitAs ends the launcher as the server ended: with its exit status, or
// by its signal (the default action restored first: Go's runtime would
// catch most), so that colibri says how the server ended and names its
// sandbox's limits (SIGXCPU, SIGKILL).
func exitAs(ws syscall.WaitStatus) {
	if !ws.Signaled() {
		syscall.Exit(ws.ExitStatus())
	}
	sig := ws.Signal()
	setDefault(sig)
	syscall.Kill(syscall.Getpid(), sig)
	syscall.Kill(syscall.Getpid(), syscall.SIGKILL) // a signal whose default is to go on (SIGCHLD…)
	syscall.Exit(128 + int(sig))
}
