package host_test

import (
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// System V IPC is outside Landlock: a segment of another process of the
// user (an X client's MIT-SHM images, a database's buffers) is readable by
// id. A sandboxed server gets none of it.
func TestSandboxRefusesSysVIPC(t *testing.T) {
	w := newSandboxWorld(t, host.Options{})
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Skipf("SKIPPING: no System V shared memory here: %v", err)
	}
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	b, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	copy(b, "the user's screen")
	unix.SysvShmDetach(b)
	args := map[string]any{"op": "shmread", "pid": id}
	if got := w.try(t, prisoner(nil), args); got != "ok: the user's screen" {
		t.Fatalf("unconfined: %s, want the segment (else this proves nothing)", got)
	}
	if got := w.try(t, prisoner(&registry.Sandbox{}), args); !strings.Contains(got, "operation not permitted") {
		t.Errorf("confined: %s, want operation not permitted", got)
	}
}

// The kernel's keyrings are outside Landlock: a key in the user's keyring
// (a Kerberos ticket, a file system's key) is read by any process of the
// user. A sandboxed server reads none.
func TestSandboxRefusesKeyrings(t *testing.T) {
	w := newSandboxWorld(t, host.Options{})
	desc := "colibri-test-" + t.Name()
	id, err := unix.AddKey("user", desc, []byte("the user's ticket"), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		t.Skipf("SKIPPING: no keyring here: %v", err)
	}
	defer unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_USER_KEYRING, 0, 0)
	args := map[string]any{"op": "keyread", "addr": desc}
	if got := w.try(t, prisoner(nil), args); got != "ok: the user's ticket" {
		t.Fatalf("unconfined: %s, want the key (else this proves nothing)", got)
	}
	if got := w.try(t, prisoner(&registry.Sandbox{}), args); !strings.Contains(got, "operation not permitted") {
		t.Errorf("confined: %s, want operation not permitted", got)
	}
}

// With net false no socket family reaches past the machine: AF_VSOCK (a
// virtual machine's way to its host) is refused as IPv4 is; Netlink, which
// getifaddrs(3) needs and which reaches only this kernel, is not.
func TestSandboxNetOffRefusesEveryFamily(t *testing.T) {
	w := newSandboxWorld(t, host.Options{})
	confined := prisoner(&registry.Sandbox{Net: netOff()})
	vsock := map[string]any{"op": "socket", "addr": "40/" + strconv.Itoa(syscall.SOCK_STREAM)} // AF_VSOCK
	switch got := w.try(t, prisoner(nil), vsock); {
	case strings.Contains(got, "address family not supported"):
		t.Log("this kernel has no AF_VSOCK: that case proves nothing here")
	case !strings.HasPrefix(got, "ok: "):
		t.Fatalf("unconfined AF_VSOCK: %s", got)
	default:
		if got := w.try(t, confined, vsock); !strings.Contains(got, "operation not permitted") {
			t.Errorf("confined AF_VSOCK: %s, want operation not permitted", got)
		}
	}
	netlink := map[string]any{"op": "socket", "addr": strconv.Itoa(syscall.AF_NETLINK) + "/" + strconv.Itoa(syscall.SOCK_RAW)}
	if got := w.try(t, confined, netlink); !strings.HasPrefix(got, "ok: ") {
		t.Errorf("confined AF_NETLINK: %s, want ok", got)
	}
}
