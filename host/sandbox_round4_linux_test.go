package host_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/sandbox"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// copyFake puts a copy of the fake servers' binary at path.
func copyFake(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(fakeBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// A shared writable mapping of /dev/zero is memory RLIMIT_DATA does not
// count: unconfined, 300 MiB of it is resident; under max_memory_mb 160
// the device opens read only, so no such mapping exists. The devices a
// server writes (/dev/null) it still writes.
func TestSandboxDevZeroIsNoWayPastMemory(t *testing.T) {
	w := newSandboxWorld(t, host.Options{})
	args := map[string]any{"op": "devzero", "mb": 300}
	got := w.try(t, prisoner(nil), args)
	rss, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(got, "ok: rss "), " MiB"))
	if rss < 300 {
		t.Fatalf("unconfined: %s, want 300 MiB or more resident (else this proves nothing)", got)
	}
	mem := prisoner(&registry.Sandbox{MaxMemoryMB: 160})
	if got := w.try(t, mem, args); !strings.Contains(got, "permission denied") {
		t.Errorf("confined, max_memory_mb 160: %s, want permission denied", got)
	}
	if got := w.try(t, mem, map[string]any{"op": "write", "path": "/dev/null"}); !strings.HasPrefix(got, "ok: ") {
		t.Errorf("confined, write /dev/null: %s, want ok", got)
	}
}

// The open-file limit inside the sandbox is max_open_files (default
// 1024), which bounds the kernel's socket buffers a server can hold:
// 1,500 socket pairs (~357 MB of kernel memory once filled) open
// unconfined, not confined.
func TestSandboxOpenFilesBoundSocketBuffers(t *testing.T) {
	w := newSandboxWorld(t, host.Options{})
	args := map[string]any{"op": "pairs", "pid": 1500}
	if got := w.try(t, prisoner(nil), args); got != "ok: 1500 pairs" {
		t.Fatalf("unconfined: %s, want 1500 pairs (else this proves nothing)", got)
	}
	for _, c := range []struct {
		sb   *registry.Sandbox
		most int
	}{{&registry.Sandbox{}, 512}, {&registry.Sandbox{MaxOpenFiles: 64}, 32}} {
		got := w.try(t, prisoner(c.sb), args)
		_, after, _ := strings.Cut(got, "after ")
		n, _ := strconv.Atoi(strings.Fields(after + " x")[0])
		if !strings.Contains(got, "too many open files") || n == 0 || n >= c.most {
			t.Errorf("max_open_files %d: %s, want too many open files before %d pairs", c.sb.MaxOpenFiles, got, c.most)
		}
	}
}

// Every file colibri reads for an entry is refused to every sandboxed
// server, wherever it lies: a read grant that covers another entry's
// oauth.token_file is a config error naming both, and a token file beside
// the server's own executable (whose folder is granted without asking)
// leaves that folder ungranted.
func TestSandboxNeverGrantsTokenFiles(t *testing.T) {
	w := newSandboxWorld(t, host.Options{})
	dir := filepath.Join(w.notGranted, "tokens")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(dir, "github.json")
	if err := os.WriteFile(token, []byte(`{"access_token":"gho_secret","refresh_token":"ghr_secret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := prisoner(&registry.Sandbox{Read: []string{dir}, At: "/servers/prisoner/sandbox"})
	srv.TokenFiles = []string{token}
	_, err := w.h.ListTools(t.Context(), srv, nil)
	if e := wantKind(t, err, failure.KindConfig, failure.PhaseSpawn); !strings.Contains(e.Error(), "sandbox read/0: "+dir) || !strings.Contains(e.Error(), token) {
		t.Errorf("message %q should name the grant and the token file", e.Error())
	}

	beside := prisoner(&registry.Sandbox{})
	beside.Command = filepath.Join(dir, "srv")
	copyFake(t, beside.Command)
	beside.TokenFiles = []string{token}
	args := map[string]any{"op": "read", "path": token}
	free := fake("prisoner")
	free.Command = beside.Command
	if got := w.try(t, free, args); !strings.HasPrefix(got, "ok: ") {
		t.Fatalf("unconfined: %s, want ok (else this proves nothing)", got)
	}
	if got := w.try(t, beside, args); !strings.Contains(got, "permission denied") {
		t.Errorf("confined, the token file beside its executable: %s, want permission denied", got)
	}
}

// A sandboxed server whose executable sits in the registry's folder starts
// (its executable granted alone, the folder not), and check says what the
// start does.
func TestSandboxExecutableBesideRegistry(t *testing.T) {
	w := newSandboxWorld(t, host.Options{})
	srv := prisoner(&registry.Sandbox{})
	srv.Command = filepath.Join(filepath.Dir(w.registry), "srv")
	copyFake(t, srv.Command)
	checkErr := w.h.Check(srv)
	_, startErr := w.h.ListTools(t.Context(), srv, nil)
	if checkErr != nil || startErr != nil {
		t.Fatalf("check: %v; start: %v; want both to work", checkErr, startErr)
	}
	if got := w.try(t, srv, map[string]any{"op": "read", "path": w.registry}); !strings.Contains(got, "permission denied") {
		t.Errorf("read the registry beside it: %s, want permission denied", got)
	}
}

// An automatic package grant never climbs to a folder others may write:
// an empty setup.py three folders up, in a folder like /tmp, does not
// grant the tree; check and the servers tool show the grant made.
func TestSandboxAutomaticGrantsStopAtSharedFolders(t *testing.T) {
	w := newSandboxWorld(t, host.Options{})
	shared := filepath.Join(w.notGranted, "shared")
	script := filepath.Join(shared, "a", "b", "c", "server.py")
	secret := filepath.Join(shared, "a", "someone-elses.txt")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(shared, "setup.py"), script, secret} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := prisoner(&registry.Sandbox{})
	srv.Args = append(srv.Args, script)
	free := prisoner(nil)
	free.Args = srv.Args
	args := map[string]any{"op": "read", "path": secret}
	if got := w.try(t, free, args); !strings.HasPrefix(got, "ok: ") {
		t.Fatalf("unconfined: %s (else this proves nothing)", got)
	}
	if got := w.try(t, srv, args); !strings.Contains(got, "permission denied") {
		t.Errorf("confined: %s, want permission denied", got)
	}
	if line := w.h.Confinement(srv); !strings.Contains(line, "automatic read "+filepath.Dir(fakeBin)+" "+filepath.Dir(script)) {
		t.Errorf("confinement %q should show the automatic grants, the script's own folder last", line)
	}
}

// The private HOME persists across requests (per_server, the default);
// with "home": "per_request" each process gets a fresh one, removed once
// it is gone.
func TestSandboxHomePerRequest(t *testing.T) {
	w := newSandboxWorld(t, host.Options{})
	home := func(srv *registry.Server) string {
		got := w.try(t, srv, map[string]any{"op": "env"})
		h, _, _ := strings.Cut(strings.TrimPrefix(got, "ok: HOME="), " ")
		return h
	}
	kept := prisoner(&registry.Sandbox{})
	h := home(kept)
	if got := w.try(t, kept, map[string]any{"op": "write", "path": filepath.Join(h, "left")}); !strings.HasPrefix(got, "ok: ") {
		t.Fatal(got)
	}
	if got := w.try(t, kept, map[string]any{"op": "read", "path": filepath.Join(h, "left")}); !strings.HasPrefix(got, "ok: ") {
		t.Errorf("per_server: %s, want the file the last request left", got)
	}

	fresh := prisoner(&registry.Sandbox{Home: registry.HomePerRequest})
	first := home(fresh)
	if first == h || first == sandbox.HomeDir(w.state, "prisoner") {
		t.Fatalf("per_request HOME %s is the server's", first)
	}
	if second := home(fresh); second == first {
		t.Errorf("two requests got the same HOME %s", first)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(first); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the per_request HOME %s is still there after its process ended", first)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
