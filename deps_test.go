// Package colibri_test holds repository-wide checks.
package colibri_test

import (
	"debug/elf"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const module = "github.com/colibri-mcp/colibri-mcp/"

// The one-way imports of docs/architecture.md: cmd/colibri-mcp → internal/httpserve →
// tools → host → {jail, registry}. Each package lists what it must never import (prefixes).
var forbidden = map[string][]string{
	"registry": {"os/exec", module + "host", module + "jail", module + "tools", module + "cmd",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// regfile writes registry files (atomically, under a lock, keeping the
	// person's text): files alone, nothing above registry.
	"registry/regfile": {"os/exec", "net/http", module + "host", module + "jail", module + "tools", module + "cmd",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	"jail": {module + "registry", module + "host", module + "tools", module + "cmd",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	"host": {module + "tools", module + "cmd", "github.com/urfave/cli"},
	// internal/schema compiles hosted schemas for host and registry alike.
	"internal/schema": {"os/exec", module + "host", module + "jail", module + "registry", module + "tools", module + "cmd",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	"tools": {module + "cmd", "github.com/urfave/cli"},
	// internal/gcpace paces the collector: the runtime alone.
	"internal/gcpace": {"os/exec", "net", module + "host", module + "tools", module + "cmd", module + "registry",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// internal/spare keeps started processes: it never starts one itself,
	// nor knows MCP or the registry.
	"internal/spare": {"os/exec", module + "host", module + "jail", module + "registry", module + "tools", module + "cmd",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// audit and metrics are leaves: they know nothing of what they record.
	"audit": {"os/exec", module + "host", module + "jail", module + "registry", module + "tools", module + "cmd",
		module + "policy", "github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	"metrics": {"os/exec", module + "host", module + "jail", module + "registry", module + "tools", module + "cmd",
		module + "policy", "github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// instance names this colibri and seals its callers' continuations:
	// a leaf, beneath everything that hands a caller a token.
	"internal/instance": {"os/exec", "net", module + "cmd", module + "host", module + "tools", module + "registry", module + "jail",
		module + "internal/session", "github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// reqctx is what a request's context carries: a principal and an id.
	"internal/reqctx": {"os/exec", "net", module + "host", module + "jail", module + "registry", module + "tools", module + "cmd",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// policy is pure: rules in, a decision out; it knows no host, no SDK.
	"policy": {"os/exec", module + "host", module + "jail", module + "registry", module + "tools", module + "cmd",
		module + "internal", "github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// The faces: cmd/colibri-mcp → internal/httpserve → tools; stdioserve
	// knows only go-sdk.
	"internal/httpserve": {module + "cmd", module + "tools", module + "host", "github.com/urfave/cli"},
	"internal/stdioserve": {module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/urfave/cli"},
	// oauth gives remote upstreams their credentials: host calls it through
	// a function in host.Options, never the other way round.
	"internal/oauth": {module + "cmd", module + "host", module + "tools", module + "jail", "github.com/urfave/cli"},
	// lineconn frames and moves messages for go-sdk; it knows nothing else.
	"internal/lineconn": {module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/urfave/cli"},
	// bulk moves bytes by reference: it knows neither JSON-RPC nor MCP.
	"internal/bulk": {"os/exec", "net", "net/http", module + "cmd", module + "host", module + "jail", module + "registry",
		module + "tools", module + "internal/lineconn", module + "internal/stdioserve", "github.com/modelcontextprotocol/go-sdk",
		"github.com/urfave/cli"},
	// internal/remote is one kind of upstream, for host: HTTP and the SDK's
	// client transports, nothing of host's or above, and no processes.
	"internal/remote": {module + "host", module + "jail", module + "tools", module + "cmd",
		module + "internal/httpserve", module + "internal/session", module + "internal/proc", module + "internal/launch",
		module + "internal/pool", "github.com/urfave/cli"},
	// pin keeps the pin file and judges lists; tools decides what a change
	// does. It knows no registry, host or command line.
	"internal/pin": {module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/urfave/cli"},
	// editorconf is pure: an editor's file in, registry entries out; the
	// command reads, validates (with registry) and writes.
	"internal/editorconf": {"os/exec", "net/http", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// editorconf's parts are pure too: the syntaxes of editors' files, and
	// the rewriting of one by import --apply.
	"internal/editorconf/syntax": {"os/exec", "net/http", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		module + "internal/jsonsplice", "github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	"internal/editorconf/rewrite": {"os/exec", "net/http", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// importcmd is import's work: files, editorconf and the registry's
	// writer; no processes, no network, nothing of the engine.
	"internal/importcmd": {"os/exec", "net/http", module + "cmd", module + "host", module + "jail", module + "tools",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// termview lays tools' answers out for a terminal: no processes, no
	// command line.
	"internal/termview": {module + "cmd", "github.com/urfave/cli"},
	// clihelp shapes the command tree's usage errors and help: cli alone.
	"internal/clihelp": {"os/exec", "net/http", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/modelcontextprotocol/go-sdk"},
	// sandbox is colibri's launcher too: it runs before execve(2) of every
	// sandboxed server, so it stays small (no MCP, no registry, no network).
	"internal/sandbox": {"os/exec", "net", "net/http", module + "cmd", module + "host", module + "jail", module + "registry",
		module + "tools", "github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// early is the launcher itself, run from its init: it needs nothing
	// but syscall, so that Go initializes it among the first packages of
	// colibri's binary (the order is by import path, as dependencies
	// allow): no os, no fmt, no encoding, no library, nothing of colibri's.
	"internal/sandbox/early": {"os", "fmt", "strconv", "strings", "encoding", "reflect", "time", "golang.org/x/",
		"github.com/landlock-lsm", "github.com/elastic", "github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools"},
	// colibri-sandbox is early in a binary of its own: nothing else.
	"cmd/colibri-sandbox": {"fmt", "encoding", "net", "golang.org/x/", "github.com/landlock-lsm", "github.com/elastic",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli", module + "host", module + "jail", module + "registry",
		module + "tools", module + "internal/proc"},
	// Opening, locking and writing files people name and edit, and reading
	// env files: no processes, no network, nothing of colibri's above them.
	"internal/safefile": {"os/exec", "net", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	"internal/jsonsplice": {"os/exec", "net", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	"internal/envfile": {"os/exec", "net", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// health reads registry errors and logs; the faces and metrics are
	// wired to it by cmd.
	"internal/health": {"os/exec", "net/http", module + "cmd", module + "host", module + "jail", module + "tools", module + "metrics",
		module + "internal/httpserve", "github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// Small leaf packages of hostile round three: pure, below everything.
	"internal/suggest": {"os", "os/exec", "net", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools"},
	"internal/relist":  {"os", "os/exec", "net", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools"},
	// The ${NAME} syntax: pure text, below the registry, the editor import
	// and env files alike.
	"internal/varref": {"os/exec", "net", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		module + "internal/safefile"},
	// toolsearch ranks; it reads nothing and knows no MCP.
	"internal/toolsearch": {"os", "os/exec", "net", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// The engine below host (docs/architecture.md#the-engine-below-host): a child process and what
	// to run know no MCP; a session starts no process and reads no
	// registry; the pool opens sessions only through its Options.Open; the
	// remote upstream satisfies session.Upstream without importing it.
	"internal/proc": {module + "cmd", module + "host", module + "tools", module + "registry", module + "jail",
		module + "internal/session", module + "internal/launch", "github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	"internal/launch": {module + "cmd", module + "host", module + "tools", module + "internal/session", module + "internal/proc",
		module + "internal/pool", "github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	"internal/session": {module + "cmd", module + "host", module + "tools", module + "registry", module + "jail",
		module + "internal/proc", module + "internal/launch", module + "internal/pool", module + "internal/remote",
		module + "internal/sandbox", "github.com/urfave/cli"},
	"internal/pool": {module + "cmd", module + "host", module + "tools", module + "jail", module + "internal/proc",
		module + "internal/launch", module + "internal/remote", module + "internal/sandbox", "github.com/urfave/cli"},
	"internal/argcheck": {module + "cmd", module + "host", module + "tools", module + "jail", module + "registry",
		module + "internal/session", module + "internal/proc", "github.com/urfave/cli"},
	"internal/redact": {"os/exec", "net", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// failure and principal are the vocabulary every layer shares: leaves.
	"internal/failure": {"os/exec", "net", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	// describe is what a model reads of colibri's own tools: text from the
	// registry, nothing that runs, records or decides.
	"tools/describe": {module + "cmd", module + "host", module + "jail", module + "audit", module + "metrics",
		module + "internal/pin", module + "internal/bulk", "github.com/urfave/cli"},
	// catalog keeps what colibri offers: the host reads lists for it and
	// tools judges them, through functions it is given.
	"tools/catalog": {module + "cmd", module + "host", module + "jail", module + "audit", module + "metrics",
		module + "internal/bulk", module + "internal/httpserve", module + "internal/stdioserve", "github.com/urfave/cli"},
	// input reads a call's bytes: schemas and JSON, nothing that runs,
	// records or decides.
	"tools/input": {module + "cmd", module + "host", module + "jail", module + "audit", module + "metrics",
		module + "internal/pin", module + "tools/catalog", "github.com/urfave/cli"},
	// answer shapes results: the failure vocabulary and MCP's types only.
	"tools/answer": {module + "cmd", module + "host", module + "jail", module + "registry", module + "audit", module + "metrics",
		module + "policy", module + "internal/pin", module + "internal/bulk", "github.com/urfave/cli"},
	// record writes what became of a call; it decides nothing and reaches
	// no server.
	"tools/record": {module + "cmd", module + "host", module + "jail", module + "registry", module + "internal/pin",
		module + "tools/catalog", "github.com/urfave/cli"},
	// caller describes the caller to the host (session.Caller); it records,
	// offers and judges nothing.
	"tools/caller": {module + "cmd", module + "audit", module + "metrics", module + "internal/pin", module + "tools/catalog",
		"github.com/urfave/cli"},
	// upver is a book of versions: no SDK, no I/O, nothing above it.
	"internal/upver": {"os", "os/exec", "net", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
}

// What a package must not import itself, though it reaches it through
// another: tools starts processes and jails only through host; the HTTP
// face reaches hosted servers only through tools.
var forbiddenDirect = map[string][]string{
	"tools":               {"os/exec", module + "jail"},
	"policy":              {"os", "io", "io/fs", "net", "net/http", "time", "math/rand", "math/rand/v2"}, // no I/O, no clock
	"internal/httpserve":  {"os/exec", module + "host", module + "jail", module + "registry"},
	"internal/stdioserve": {"os/exec"}, // go-sdk imports it (CommandTransport); the face must not
	"internal/lineconn":   {"os/exec"},
	"internal/editorconf": {"os"},      // pure: it reads no file (fmt imports os, so only directly)
	"internal/varref":     {"os"},      // pure text
	"internal/bulk":       {"os"},      // no I/O of its own (fmt imports os, so only directly)
	"internal/jsonsplice": {"os"},      // pure: bytes in, bytes out
	"internal/remote":     {"os/exec"}, // go-sdk imports it (CommandTransport); a remote upstream starts nothing
	"internal/pin":        {"os/exec"}, // go-sdk imports it (CommandTransport); pins start nothing
	"internal/session":    {"os/exec"}, // go-sdk imports it (CommandTransport); a session starts nothing
	"internal/pool":       {"os/exec"}, // the pool opens sessions through Options.Open
	"internal/argcheck":   {"os/exec"},

	// The packages of issue 24's thinning of cmd, editorconf and registry.
	"internal/editorconf/syntax":  {"os"}, // pure, as editorconf
	"internal/editorconf/rewrite": {"os"},
	"internal/termview":           {"os/exec", module + "host", module + "jail", module + "registry"}, // tools' answers, not the engine's
	// tools/ split by what it provides.
	"tools/describe": {"os", "os/exec"}, // text only: it reads no file, starts nothing
	"tools/catalog":  {"os", "os/exec"}, // it reads no file and starts nothing itself
	"tools/input":    {"os", "os/exec"}, // bytes in, a value out
	"tools/answer":   {"os", "os/exec"}, // a value in, a result out
	"tools/record":   {"os", "os/exec"}, // through audit and metrics only
	"tools/caller":   {"os", "os/exec", module + "jail", module + "registry"},
}

// Calls library packages must never make.
var forbiddenCalls = []string{"os.Exit(", "slog.SetDefault(", "log.Fatal", "signal.NotifyContext("}

func TestImportRules(t *testing.T) {
	for pkg, bad := range forbidden {
		files, _ := filepath.Glob(filepath.Join(pkg, "*.go"))
		if len(files) == 0 {
			t.Errorf("package %s has no Go files", pkg)
		}
		// Transitively: a rule is broken through an intermediate package too.
		for _, imp := range deps(t, "./"+pkg) {
			for _, b := range bad {
				if imp == b || strings.HasPrefix(imp, b+"/") || strings.HasPrefix(imp, b) && !strings.HasPrefix(b, module) {
					t.Errorf("%s depends on %s: it must never (docs/architecture.md)", pkg, imp)
				}
			}
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			for _, imp := range imports(t, file) {
				if imp == "testing" {
					t.Errorf("%s imports testing: production code must not", file)
				}
				for _, b := range forbiddenDirect[pkg] {
					if imp == b {
						t.Errorf("%s imports %s: %s must go through host for it", file, imp, pkg)
					}
				}
			}
			src, _ := os.ReadFile(file)
			for _, call := range forbiddenCalls {
				if strings.Contains(string(src), call) && !(pkg == "internal/sandbox/early" && call == "os.Exit(") {
					// (early is main's own first step: colibri run as the sandbox
					// launcher exits there when it cannot exec the server.)
					t.Errorf("%s calls %s: only main may", file, strings.TrimSuffix(call, "("))
				}
			}
		}
	}
}

// The shipped binary carries no test tooling and no testing package.
func TestBinaryHoldsNoTestCode(t *testing.T) {
	for _, imp := range deps(t, "./cmd/colibri-mcp") {
		switch {
		case imp == "testing", strings.HasPrefix(imp, module+"internal/testbuild"),
			strings.HasPrefix(imp, module+"internal/proctable"), strings.HasPrefix(imp, module+"internal/fakemcp"),
			strings.HasPrefix(imp, module+"internal/bench"), strings.HasPrefix(imp, module+"internal/syncbuf"),
			strings.HasPrefix(imp, module+"internal/testwait"),
			strings.HasPrefix(imp, module+"internal/oauthtest"), strings.HasPrefix(imp, module+"internal/mcpregistry/registrytest"):
			t.Errorf("colibri-mcp depends on %s, which is for tests and benchmarks only", imp)
		}
	}
}

// deps lists the packages pkg depends on, transitively (tests excluded).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func TestNothingImportsCmd(t *testing.T) {
	filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		for _, imp := range imports(t, path) {
			if strings.HasPrefix(imp, module+"cmd") {
				t.Errorf("%s imports %s: nothing imports cmd/", path, imp)
			}
		}
		return nil
	})
}

func imports(t *testing.T, file string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("parsing %s: %v", file, err)
	}
	var out []string
	for _, s := range f.Imports {
		p, _ := strconv.Unquote(s.Path.Value)
		out = append(out, p)
	}
	return out
}

// make install puts each file in FreeBSD's place under DESTDIR and PREFIX,
// builds nothing (make build && sudo make install), and the sample registry
// it installs passes check --probe where it is installed. It builds release
// binaries (another configuration of the whole dependency tree), so it runs
// in `make install-test` (part of `make check-all`), not in `make test`; its
// build output goes to a scratch BIN, never bin/.
func TestMakeInstall(t *testing.T) {
	if os.Getenv("COLIBRI_TEST_INSTALL") == "" {
		t.Skip("run by `make install-test` (it builds release binaries)")
	}
	make := func(args ...string) (string, error) {
		out, err := exec.Command("make", args...).CombinedOutput()
		return string(out), err
	}
	// Without a build, install refuses, and says what to run.
	if out, err := make("install", "BIN="+t.TempDir(), "PREFIX="+t.TempDir()); err == nil || !strings.Contains(out, "run 'make build' first") {
		t.Errorf("make install with nothing built: %v\n%s", err, out)
	}
	bin := t.TempDir() // build output stays out of the source tree
	if out, err := make("build", "BIN="+bin); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	dest := t.TempDir()
	if out, err := make("install", "BIN="+bin, "DESTDIR="+dest, "PREFIX=/usr/local"); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for path, mode := range map[string]os.FileMode{
		"usr/local/bin/colibri-mcp":                             0o755,
		"usr/local/libexec/colibri-mcp/demo-mcp-server":         0o755,
		"usr/local/etc/rc.d/colibri_mcp":                        0o555,
		"usr/local/etc/colibri/external-mcp.json.sample":        0o644,
		"usr/local/etc/newsyslog.conf.d/colibri_mcp.conf":       0o644,
		"usr/local/share/man/man8/colibri-mcp.8":                0o644,
		"usr/local/share/doc/colibri-mcp/registry.md":           0o644,
		"usr/local/share/doc/colibri-mcp/freebsd.md":            0o644,
		"usr/local/share/doc/colibri-mcp/registry.schema.json":  0o644,
		"usr/local/share/doc/colibri-mcp/pins-lock.schema.json": 0o644,
		"usr/local/share/doc/colibri-mcp/README.md":             0o644,
	} {
		st, err := os.Stat(filepath.Join(dest, path))
		if err != nil {
			t.Errorf("not installed: %s", path)
			continue
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), mode)
		}
	}
	// The sandbox launcher is Linux's: built and installed there alone.
	if st, err := os.Stat(filepath.Join(dest, "usr/local/libexec/colibri-mcp/colibri-sandbox")); (err == nil) != (runtime.GOOS == "linux") || err == nil && st.Mode().Perm() != 0o755 {
		t.Errorf("libexec/colibri-mcp/colibri-sandbox on %s: %v, %v", runtime.GOOS, st, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "usr/local/etc/colibri/external-mcp.json.sample")); !strings.Contains(string(b), `"/usr/local/libexec/colibri-mcp/demo-mcp-server"`) {
		t.Errorf("the sample registry does not name the installed demo server:\n%s", b)
	}
	// The README's user install: PREFIX=~/.local, then check the sample.
	prefix := t.TempDir()
	if out, err := make("install", "BIN="+bin, "PREFIX="+prefix); err != nil {
		t.Fatalf("make install PREFIX=%s: %v\n%s", prefix, err, out)
	}
	check := exec.Command(filepath.Join(prefix, "bin/colibri-mcp"), "--external-config", filepath.Join(prefix, "etc/colibri/external-mcp.json.sample"), "check", "--probe")
	if out, err := check.CombinedOutput(); err != nil || !strings.Contains(string(out), "1 ok, 0 failed") {
		t.Errorf("check --probe of the installed sample: %v\n%s", err, out)
	}
	testInstallFreeBSDImage(t, make)
}

// An image built from this host (docs/freebsd.md, "Building an appliance
// image"): make release builds both FreeBSD binaries for both
// architectures; make install BIN=dist/freebsd-amd64 installs FreeBSD's
// layout, nothing Linux-only, and run without privilege (nobody, when the
// tests are root) writes no owners and an mtree METALOG with root's.
func testInstallFreeBSDImage(t *testing.T, make func(args ...string) (string, error)) {
	if out, err := make("release"); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		for _, name := range []string{"colibri-mcp", "demo-mcp-server"} {
			f, err := elf.Open(filepath.Join("dist", "freebsd-"+arch, name))
			if err != nil {
				t.Errorf("dist/freebsd-%s/%s: %v", arch, name, err)
				continue
			}
			want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
			if f.OSABI != elf.ELFOSABI_FREEBSD || f.Machine != want {
				t.Errorf("dist/freebsd-%s/%s: %v %v, want FreeBSD %v", arch, name, f.OSABI, f.Machine, want)
			}
			f.Close()
		}
	}
	img, err := os.MkdirTemp("", "colibri-image-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(img)
	os.Chmod(img, 0o777)
	cmd := exec.Command("make", "install", "BIN=dist/freebsd-amd64", "DESTDIR="+img, "PREFIX=/usr/local")
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		cmd.Env = append(os.Environ(), "HOME=/nonexistent")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install BIN=dist/freebsd-amd64 (unprivileged): %v\n%s", err, out)
	}
	for _, p := range []string{"usr/local/bin/colibri-mcp", "usr/local/libexec/colibri-mcp/demo-mcp-server", "usr/local/etc/rc.d/colibri_mcp"} {
		if _, err := os.Stat(filepath.Join(img, p)); err != nil {
			t.Errorf("image: %v", err)
		}
	}
	if f, err := elf.Open(filepath.Join(img, "usr/local/bin/colibri-mcp")); err != nil || f.OSABI != elf.ELFOSABI_FREEBSD {
		t.Errorf("the image's colibri-mcp is not FreeBSD's: %v", err)
	}
	if _, err := os.Stat(filepath.Join(img, "usr/local/libexec/colibri-mcp/colibri-sandbox")); err == nil {
		t.Error("the FreeBSD image holds Linux's sandbox launcher")
	}
	metalog, err := os.ReadFile(filepath.Join(img, "METALOG"))
	if err != nil {
		t.Fatalf("no METALOG beside the unprivileged image: %v", err)
	}
	for _, want := range []string{"#mtree", "./usr/local/bin/colibri-mcp type=file uname=root gname=wheel mode=755",
		"./usr/local/etc/rc.d/colibri_mcp type=file uname=root gname=wheel mode=555", "./usr/local/libexec/colibri-mcp type=dir uname=root gname=wheel"} {
		if !strings.Contains(string(metalog), want) {
			t.Errorf("METALOG lacks %q:\n%s", want, metalog)
		}
	}
}

// testOnly are the packages that serve tests and benchmarks alone; the
// architecture's import graph leaves them out.
var testOnly = map[string]bool{
	"internal/fakemcp": true, "internal/testbuild": true, "internal/proctable": true,
	"internal/syncbuf": true, "internal/testwait": true, "internal/bench": true, "internal/oauthtest": true, "internal/mcpregistry/registrytest": true,
	"examples/demo-server": true,
}

// docs/architecture.md's first code block is the graph of colibri's own imports, one
// line a package ("A  →  B, C": A imports B and C directly). It must be the
// graph the code has: every production package that imports another of
// colibri's, with exactly those. On a mismatch the test prints the block the
// code has, to paste in.
func TestArchitectureGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	want := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if pkg == strings.TrimSuffix(module, "/") || testOnly[pkg] {
			continue
		}
		var deps []string
		for _, imp := range fields[1:] {
			if dep, ok := strings.CutPrefix(imp, module); ok && !testOnly[dep] {
				deps = append(deps, dep)
			}
		}
		if len(deps) > 0 {
			sort.Strings(deps)
			want[pkg] = deps
		}
	}
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "```\n")
	block, _, _ := strings.Cut(rest, "```")
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		from, to, ok := strings.Cut(line, "→")
		if !ok {
			t.Fatalf("docs/architecture.md: graph line %q has no →", line)
		}
		var deps []string
		for _, d := range strings.Split(to, ",") {
			deps = append(deps, strings.TrimSpace(d))
		}
		sort.Strings(deps)
		got[strings.TrimSpace(from)] = deps
	}
	if !reflect.DeepEqual(got, want) {
		pkgs := make([]string, 0, len(want))
		for p := range want {
			pkgs = append(pkgs, p)
		}
		sort.Slice(pkgs, func(i, j int) bool { // most imports first: the top of the house first
			if len(want[pkgs[i]]) != len(want[pkgs[j]]) {
				return len(want[pkgs[i]]) > len(want[pkgs[j]])
			}
			return pkgs[i] < pkgs[j]
		})
		var b strings.Builder
		for _, p := range pkgs {
			fmt.Fprintf(&b, "%-22s →  %s\n", p, strings.Join(want[p], ", "))
		}
		t.Errorf("docs/architecture.md's import graph is not the code's; the code's is:\n%s", b.String())
	}
}
