package host_test

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/sandbox"
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

// unixListener is a suite-made pathname socket posing as one of the user's
// (a D-Bus bus, an ssh-agent). Its listening socket is non-blocking and
// nothing accepts in the background: a connect(2) to a Unix stream socket
// completes into the backlog before it returns, so accepted() counts
// exactly the connections made until then.
type unixListener struct {
	path string
	fd   int
}

func listenUnix(t *testing.T, path string) *unixListener {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 16); err != nil {
		t.Fatal(err)
	}
	return &unixListener{path: path, fd: fd}
}

// accepted accepts and closes the connections waiting, and says how many.
func (l *unixListener) accepted(t *testing.T) int {
	t.Helper()
	for n := 0; ; n++ {
		c, _, err := unix.Accept4(l.fd, unix.SOCK_CLOEXEC)
		if err == unix.EAGAIN {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(c)
	}
}

// Whatever net says (here its default, true), a sandboxed server reaches no
// pathname Unix socket outside its write paths and its unix list: not the
// session bus (whose systemd runs any command outside the sandbox), not the
// user's ssh-agent. Below Landlock ABI 9 seccomp refuses every Unix socket;
// from 9 Landlock refuses the path. Stream and seqpacket pairs keep
// working, datagram pairs do not.
func TestSandboxRefusesUnixSockets(t *testing.T) {
	w := newSandboxWorld(t, host.Options{})
	bus := listenUnix(t, filepath.Join(w.notGranted, "run", "user", "1000", "bus"))
	agent := listenUnix(t, filepath.Join(w.notGranted, "ssh-XXXXabcd", "agent.4242"))
	confined := prisoner(&registry.Sandbox{Write: []string{w.granted}})
	for _, l := range []*unixListener{bus, agent} {
		args := map[string]any{"op": "unix", "path": l.path}
		if got := w.try(t, prisoner(nil), args); got != "ok: connected" || l.accepted(t) != 1 {
			t.Fatalf("unconfined %s: %s; want ok and one connection (else this proves nothing)", l.path, got)
		}
		if got := w.try(t, confined, args); !strings.Contains(got, "operation not permitted") && !strings.Contains(got, "permission denied") {
			t.Errorf("confined %s: %s, want denied", l.path, got)
		}
		if n := l.accepted(t); n != 0 {
			t.Errorf("%s got %d connections from the confined server, want none", l.path, n)
		}
		// The family with a bit above its 32 set: the kernel reads an
		// int, so a filter comparing the whole register would let it by.
		hi := map[string]any{"op": "unixhi", "path": l.path}
		if got := w.try(t, prisoner(nil), hi); got != "ok: connected" || l.accepted(t) != 1 {
			t.Fatalf("unconfined %v: %s; want ok and one connection", hi, got)
		}
		if got := w.try(t, confined, hi); !strings.Contains(got, "operation not permitted") && !strings.Contains(got, "permission denied") {
			t.Errorf("confined %v: %s, want denied", hi, got)
		}
		if n := l.accepted(t); n != 0 {
			t.Errorf("%s got %d connections from the confined server (family with high bits), want none", l.path, n)
		}
	}
	pairHi := map[string]any{"op": "pairhi"}
	if got := w.try(t, prisoner(nil), pairHi); got != "ok: paired" {
		t.Fatalf("unconfined %v: %s", pairHi, got)
	}
	if got := w.try(t, confined, pairHi); !strings.Contains(got, "operation not permitted") {
		t.Errorf("confined %v: %s, want operation not permitted", pairHi, got)
	}
	for _, typ := range []string{"stream", "seqpacket"} {
		if got := w.try(t, confined, map[string]any{"op": "pair", "addr": typ}); got != "ok: ping" {
			t.Errorf("confined %s socket pair: %s, want ok: ping", typ, got)
		}
	}
	dgram := map[string]any{"op": "pair", "addr": "dgram"}
	if got := w.try(t, prisoner(nil), dgram); got != "ok: ping" {
		t.Fatalf("unconfined datagram pair: %s", got)
	}
	if got := w.try(t, confined, dgram); !strings.Contains(got, "operation not permitted") {
		t.Errorf("confined datagram pair: %s, want operation not permitted", got)
	}
}

// A unix grant: from Landlock ABI 9 the granted socket alone is reachable;
// below it the kernel cannot tell socket paths apart, so the entry fails
// kind sandbox and starts nothing, and with best_effort every pathname
// socket is reachable, warned once and said by the confinement line.
func TestSandboxUnixGrant(t *testing.T) {
	logs := &lockedBuffer{}
	w := newSandboxWorld(t, host.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	db := listenUnix(t, filepath.Join(w.notGranted, "pg", ".s.PGSQL.5432"))
	bus := listenUnix(t, filepath.Join(w.notGranted, "bus"))
	grant := &registry.Sandbox{Unix: []string{db.path}, At: "/servers/prisoner/sandbox"}
	reach := func(srv *registry.Server, l *unixListener) string {
		return w.try(t, srv, map[string]any{"op": "unix", "path": l.path})
	}
	if sandbox.DetectABI() >= 9 {
		if got := reach(prisoner(grant), db); got != "ok: connected" {
			t.Errorf("the granted socket: %s", got)
		}
		if got := reach(prisoner(grant), bus); !strings.Contains(got, "permission denied") {
			t.Errorf("another socket: %s, want permission denied", got)
		}
		return
	}
	_, err := w.h.ListTools(t.Context(), prisoner(grant), nil)
	if e := wantKind(t, err, failure.KindSandbox, failure.PhaseSpawn); !strings.Contains(e.Error(), `"unix"`) || !strings.Contains(e.Error(), "ABI 9") {
		t.Errorf("message %q should name unix and the ABI it needs", e.Error())
	}
	if n := len(w.h.spawned()); n != 0 {
		t.Errorf("%d processes started, want none", n)
	}
	be := *grant
	be.BestEffort = true
	for range 2 {
		if got := reach(prisoner(&be), db); got != "ok: connected" {
			t.Errorf("best effort, the granted socket: %s", got)
		}
	}
	if got := reach(prisoner(&be), bus); got != "ok: connected" {
		t.Errorf("best effort, another socket: %s, want ok (all or nothing below ABI 9)", got)
	}
	if n := strings.Count(logs.String(), "every pathname Unix socket is reachable"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}
	if line := w.h.Confinement(prisoner(&be)); !strings.Contains(line, "unix "+db.path) || !strings.Contains(line, "every pathname Unix socket is reachable") {
		t.Errorf("confinement line %q should name the grant and say every socket is reachable", line)
	}
}

// Egress by destination ("net": [destinations]): through the egress proxy
// a listed loopback literal is reached; an unlisted one and a listed name
// that resolves to loopback are refused (403 naming the destination), as
// are direct TCP and UDP, which reach nothing; refusals and connections
// are counted. Where user namespaces are available the server runs in a
// network namespace of its own (its loopback is not the machine's); else
// only best_effort runs it, under Landlock's TCP rule, by port.
func TestSandboxEgressByDestination(t *testing.T) {
	var mu sync.Mutex
	refused, connected := map[string]int{}, map[string]int{}
	count := func(m map[string]int) func(string) {
		return func(s string) { mu.Lock(); m[s]++; mu.Unlock() }
	}
	w := newSandboxWorld(t, host.Options{OnEgressRefused: count(refused), OnEgressConnection: count(connected)})
	reached := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { io.WriteString(rw, "reached") }))
	defer reached.Close()
	other := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { io.WriteString(rw, "the other") }))
	defer other.Close()
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	listed := strings.TrimPrefix(reached.URL, "http://")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(other.URL, "http://"))
	// localhost by name: it resolves to loopback, which is listed as a
	// literal for the other port only.
	sb := &registry.Sandbox{Destinations: []string{listed, "localhost:" + port}, At: "/servers/prisoner/sandbox"}
	confined := prisoner(sb)
	netns := userNamespaces()
	if _, err := w.h.ListTools(t.Context(), confined, nil); !netns {
		if e := wantKind(t, err, failure.KindSandbox, failure.PhaseSpawn); !strings.Contains(e.Error(), "network namespace") {
			t.Errorf("without best_effort: %q should say what is missing", e.Error())
		}
		be := *sb
		be.BestEffort = true
		confined = prisoner(&be)
	} else if err != nil {
		t.Fatalf("in a network namespace of its own: %v", err)
	}
	free := prisoner(nil)
	for _, args := range []map[string]any{
		{"op": "tcp", "addr": listed},
		{"op": "tcp", "addr": strings.TrimPrefix(other.URL, "http://")},
	} {
		if got := w.try(t, free, args); !strings.HasPrefix(got, "ok: ") {
			t.Fatalf("unconfined %v: %s (else this proves nothing)", args, got)
		}
		if got := w.try(t, confined, args); strings.HasPrefix(got, "ok: ") {
			t.Errorf("confined %v: %s, want refused", args, got)
		}
	}
	udpArgs := map[string]any{"op": "udp", "addr": udp.LocalAddr().String()}
	buf := make([]byte, 64)
	if got := w.try(t, free, udpArgs); !strings.HasPrefix(got, "ok: ") {
		t.Fatalf("unconfined udp: %s", got)
	}
	udp.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := udp.ReadFrom(buf); err != nil {
		t.Fatalf("the unconfined datagram did not arrive: %v", err)
	}
	w.try(t, confined, udpArgs) // refused (fallback), or sent into its own loopback (namespace)
	udp.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, _, err := udp.ReadFrom(buf); err == nil {
		t.Error("the confined server's datagram reached the machine's loopback")
	}
	if got := w.try(t, confined, map[string]any{"op": "fetch", "addr": reached.URL + "/"}); got != "ok: 200 reached" {
		t.Errorf("through the proxy to the listed literal: %s", got)
	}
	for _, u := range []string{other.URL + "/", "http://localhost:" + port + "/"} {
		if got := w.try(t, confined, map[string]any{"op": "fetch", "addr": u}); !strings.HasPrefix(got, "ok: 403 ") {
			t.Errorf("through the proxy to %s: %s, want 403", u, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if refused["prisoner"] != 2 || connected["prisoner"] != 1 {
		t.Errorf("refused %d, connected %d; want 2 and 1", refused["prisoner"], connected["prisoner"])
	}
	line := w.h.Confinement(confined)
	if !strings.Contains(line, "net "+listed+",localhost:"+port) || netns == strings.Contains(line, "Landlock's TCP rule") {
		t.Errorf("confinement %q should name the destinations, and the fallback where there is one", line)
	}
}

// userNamespaces reports whether this machine starts a process in a user
// and network namespace of its own.
func userNamespaces() bool {
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}}
	return cmd.Run() == nil
}
