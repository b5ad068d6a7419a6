package launch

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/colibri-mcp/colibri-mcp/internal/sandbox/early"
)

// netnsAvailable reports whether this machine lets colibri start a process
// in a user and network namespace of its own (some distributions restrict
// unprivileged user namespaces): tried once, with the launcher.
func (b *Builder) netnsAvailable() bool {
	if b.cfg.NoUserNamespaces {
		return false
	}
	b.netnsOnce.Do(func() {
		cmd := exec.Command(b.cfg.Launcher, early.ForwardMarker) // exits at once: no socket named
		cmd.SysProcAttr = netnsAttr(&syscall.SysProcAttr{})
		if err := cmd.Start(); err == nil {
			cmd.Wait()
			b.netnsOK = true
		}
	})
	return b.netnsOK
}

// netnsAttr starts the launcher in a user and network namespace of its
// own: its user and group mapped to themselves, CAP_NET_ADMIN kept (in
// that namespace only) across its execve, for it to bring loopback up.
func netnsAttr(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
	a.AmbientCaps = []uintptr{unix.CAP_NET_ADMIN}
	return a
}
