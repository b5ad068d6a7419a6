package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// httpColibri is colibri-mcp serving HTTP: its process and its /mcp URL.
type httpColibri struct {
	cmd    *exec.Cmd
	url    string
	exited chan error
	logs   chan string // its stderr, line by line (the first 1000)
}

var urlRE = regexp.MustCompile(`url=(http://\S+/mcp)`)

// startHTTP starts `colibri-mcp serve --http ADDR` and waits until it listens.
func startHTTP(t *testing.T, addr string, extraArgs ...string) *httpColibri {
	t.Helper()
	return startHTTPWith(t, addr, writeRegistry(t, nil), extraArgs...)
}

// startHTTPWith is startHTTP on the registry file reg.
func startHTTPWith(t *testing.T, addr, reg string, extraArgs ...string) *httpColibri {
	t.Helper()
	args := append([]string{"serve", "--http", addr, "--external-config", reg, "--external-call"}, extraArgs...)
	cmd := exec.Command(colibriBin, args...)
	cmd.Env = append(os.Environ(), pinEnv(t), "E2E_SECRET=x")
	return startHTTPCmd(t, cmd)
}

// startHTTPCmd starts cmd, a `colibri-mcp serve --http` prepared by the
// caller, and waits until it listens.
func startHTTPCmd(t *testing.T, cmd *exec.Cmd) *httpColibri {
	t.Helper()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &httpColibri{cmd: cmd, exited: make(chan error, 1), logs: make(chan string, 1000)}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case c.logs <- sc.Text():
			default:
			}
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		c.exited <- cmd.Wait()
	}()
	select {
	case c.url = <-found:
	case err := <-c.exited:
		t.Fatalf("colibri-mcp exited before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("colibri-mcp did not start listening")
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
	})
	return c
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func connectHTTP(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: http.DefaultTransport}
	if token != "" {
		hc.Transport = bearer{token, http.DefaultTransport}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

func post(t *testing.T, url string, header map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestHTTPTokens(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("# editors\nfirst-token-abc\n\nsecond-token-def\n"), 0o600)
	c := startHTTP(t, "127.0.0.1:0", "--token-file", tokens)

	if code := post(t, c.url, nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code := post(t, c.url, map[string]string{"Authorization": "Bearer wrong"}); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", code)
	}
	for _, tok := range []string{"first-token-abc", "second-token-def"} {
		cs, err := connectHTTP(t, c.url, tok)
		if err != nil {
			t.Fatalf("token %s: %v", tok, err)
		}
		res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "demo", "name": "echo", "arguments": map[string]any{"message": "over http"}})
		if res.IsError || res.Content[0].(*mcp.TextContent).Text != "Echo: over http" {
			t.Errorf("call over HTTP: %v", res.Content)
		}
		res = call(t, cs, "colibri_external_mcp_list_tools", map[string]any{"server": "demo"})
		if res.IsError {
			t.Errorf("list over HTTP: %v", res.Content)
		}
		cs.Close()
	}

	// SIGHUP re-reads the file: the new token works, a removed one no longer does.
	os.WriteFile(tokens, []byte("third-token-ghi\n"), 0o600)
	c.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(5 * time.Second)
	for post(t, c.url, map[string]string{"Authorization": "Bearer third-token-ghi"}) == http.StatusUnauthorized {
		if time.Now().After(deadline) {
			t.Fatal("the token file was not re-read on SIGHUP")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := post(t, c.url, map[string]string{"Authorization": "Bearer first-token-abc"}); code != http.StatusUnauthorized {
		t.Errorf("a removed token still works after SIGHUP: %d", code)
	}
}

// A second SIGTERM during the drain ends colibri at once (CONTRACT, section
// 7), and its hosted servers with it.
func TestHTTPSecondSignalExitsAtOnce(t *testing.T) {
	c := startHTTP(t, "127.0.0.1:0")
	// colibri is ended under the client: without retries, the client's
	// Close does not spend 17 s reconnecting its streams to nothing.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: c.url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	go cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
		Arguments: map[string]any{"server": "demo", "name": "slow", "arguments": map[string]any{"steps": 600, "interval_ms": 100}}})
	var hosted []int
	for deadline := time.Now().Add(5 * time.Second); len(hosted) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hosted server never started")
		}
		hosted = proctable.Children(c.cmd.Process.Pid)
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	for deadline := time.After(10 * time.Second); ; {
		select {
		case line := <-c.logs:
			if !strings.Contains(line, "shutting down") {
				continue
			}
		case err := <-c.exited:
			t.Fatalf("colibri-mcp exited on the first SIGTERM with a call in flight: %v", err)
		case <-deadline:
			t.Fatal("the shutdown was not logged")
		}
		break
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second): // the drain's bound is 10 s
		t.Fatal("a second SIGTERM did not end colibri-mcp at once")
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		alive := false
		for _, pid := range hosted {
			alive = alive || proctable.Alive(pid)
		}
		if !alive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hosted processes %v survived colibri", hosted)
		}
	}
}

// The largest message a caller may send is the largest result and 1 MiB,
// saturated: a --max-result-bytes near the largest int64 wrapped to a
// negative bound, which go-sdk reads as no limit at all.
func TestMaxMessageSaturates(t *testing.T) {
	for given, want := range map[int64]int64{16 << 20: 17 << 20, math.MaxInt64: math.MaxInt64, math.MaxInt64 - 1<<20: math.MaxInt64} {
		if got := maxMessage(&settings{maxResultBytes: given}); got != want {
			t.Errorf("--max-result-bytes %d: largest message %d, want %d", given, got, want)
		}
	}
}

// SIGHUP without a token file (`service colibri_mcp reload` sends it) is
// logged and changes nothing; its default action would end colibri at once.
func TestHTTPReloadWithoutTokenFile(t *testing.T) {
	c := startHTTP(t, "127.0.0.1:0")
	c.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.After(10 * time.Second)
	for logged := false; !logged; {
		select {
		case line := <-c.logs:
			logged = strings.Contains(line, "SIGHUP: no token file to reload")
		case err := <-c.exited:
			t.Fatalf("colibri-mcp exited on SIGHUP: %v", err)
		case <-deadline:
			t.Fatal("SIGHUP was not logged")
		}
	}
	if code := post(t, c.url, nil); code != http.StatusOK {
		t.Errorf("after SIGHUP: %d, want 200", code)
	}
}

func TestHTTPRebindingRefused(t *testing.T) {
	c := startHTTP(t, "127.0.0.1:0")
	port := c.url[strings.LastIndex(c.url, ":")+1 : strings.LastIndex(c.url, "/")]
	if code := post(t, c.url, nil); code == http.StatusForbidden || code == http.StatusUnauthorized {
		t.Fatalf("a plain local request was refused: %d", code)
	}
	for name, h := range map[string]map[string]string{
		"rebinding Host":     {"Host": "attacker.example:" + port},
		"foreign Origin":     {"Origin": "http://attacker.example"},
		"origin, other port": {"Origin": "http://127.0.0.1:1"},
	} {
		if code := post(t, c.url, h); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}
	if code := post(t, c.url, map[string]string{"Origin": "http://localhost:" + port}); code == http.StatusForbidden {
		t.Errorf("a same-host Origin was refused")
	}
	resp, err := http.Get(strings.TrimSuffix(c.url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("healthz: %d %q", resp.StatusCode, body)
	}
}

func TestHTTPNonLoopbackNeedsToken(t *testing.T) {
	cmd := exec.Command(colibriBin, "serve", "--http", "0.0.0.0:0", "--external-config", writeRegistry(t, nil))
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("exit %d (%v), want 2; output:\n%s", code, err, out)
	}
	if !strings.Contains(string(out), "without a token file") {
		t.Errorf("the refusal does not say why:\n%s", out)
	}
}

// SIGTERM with a call in flight: the call finishes, colibri exits 0, and no
// hosted process survives.
func TestHTTPGracefulShutdown(t *testing.T) {
	t.Parallel()
	c := startHTTP(t, "127.0.0.1:0")
	cs, err := connectHTTP(t, c.url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
			Arguments: map[string]any{"server": "demo", "name": "slow", "arguments": map[string]any{"steps": 10, "interval_ms": 100}}})
		if err != nil {
			t.Errorf("call in flight: %v", err)
		}
		done <- res
	}()
	var hosted []int
	for deadline := time.Now().Add(5 * time.Second); len(hosted) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hosted server never started")
		}
		hosted = proctable.Children(c.cmd.Process.Pid)
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case res := <-done:
		if res == nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "done after 10 steps") {
			t.Errorf("the call in flight did not finish: %v", res)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the call in flight never finished")
	}
	select {
	case err := <-c.exited:
		if err != nil {
			t.Errorf("colibri-mcp exited with %v, want 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("colibri-mcp did not exit after SIGTERM")
	}
	for _, pid := range hosted {
		if proctable.Alive(pid) {
			t.Errorf("hosted process %d survived colibri", pid)
		}
	}
}

// A request body past COLIBRI_MCP_MAX_RESULT_BYTES + 1 MiB is refused (413)
// without being read whole.
func TestHTTPBodyLimit(t *testing.T) {
	c := startHTTP(t, "127.0.0.1:0", "--max-result-bytes", "1000000")
	body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("p", 3<<20) + `"}}`
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 3 MiB body with a 2 MiB limit: %d, want 413", resp.StatusCode)
	}
	if code := post(t, c.url, nil); code == http.StatusRequestEntityTooLarge {
		t.Error("a small request after the large one was refused")
	}
}

// --session-timeout reaches the HTTP face: an idle session is closed (404
// afterwards), and a value that is not a duration is a usage error.
func TestHTTPSessionTimeoutFlag(t *testing.T) {
	t.Parallel()
	c := startHTTP(t, "127.0.0.1:0", "--session-timeout", "300")
	cs, err := connectHTTP(t, c.url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// (Not polled with requests: each would keep the session in use.) The
	// client's event stream ends with the session.
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle session was not closed after --session-timeout 300 (ms)")
	}
	if code := post(t, c.url, map[string]string{"Mcp-Session-Id": cs.ID(), "MCP-Protocol-Version": "2025-11-25"}); code != http.StatusNotFound {
		t.Errorf("a request on the closed session: %d, want 404", code)
	}
	cmd := exec.Command(colibriBin, "serve", "--http", "127.0.0.1:0", "--external-config", writeRegistry(t, nil))
	cmd.Env = append(cmd.Environ(), "COLIBRI_MCP_SESSION_TIMEOUT=soon")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "COLIBRI_MCP_SESSION_TIMEOUT") {
		t.Errorf("a bad COLIBRI_MCP_SESSION_TIMEOUT: exit %d:\n%s", cmd.ProcessState.ExitCode(), out)
	}
}

// Over HTTP, a warm server's progress for a call reaches that call's own
// stream, whichever request started the process: before, every call after
// the first had its progress sent on the stream of the request that started
// the warm process, and its caller saw none.
func TestHTTPWarmProgressReachesItsOwnCaller(t *testing.T) {
	reg := writeRegistry(t, registryDoc{"warm": {"command": demoBin, "lifecycle": "persistent"}})
	c := startHTTPWith(t, "127.0.0.1:0", reg)
	type seen struct {
		mu sync.Mutex
		n  int
	}
	client := func(s *seen) *mcp.ClientSession {
		cl := mcp.NewClient(&mcp.Implementation{Name: "progress", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
				s.mu.Lock()
				s.n++
				s.mu.Unlock()
			}})
		cs, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: c.url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	var a, b seen
	for _, cs := range []*mcp.ClientSession{client(&a), client(&b)} { // a starts the warm process
		p := hostedCall("warm", "slow", map[string]any{"steps": 3, "interval_ms": 20})
		p.SetProgressToken("mine")
		if res, err := cs.CallTool(t.Context(), p); err != nil || res.IsError {
			t.Fatalf("%v %v", err, res)
		}
	}
	// go-sdk's client runs notification handlers apart from the response:
	// a call's last progress may be counted just after its result.
	count := func() (int, int) {
		a.mu.Lock()
		defer a.mu.Unlock()
		b.mu.Lock()
		defer b.mu.Unlock()
		return a.n, b.n
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		na, nb := count()
		if na == 3 && nb == 3 {
			break
		}
		if na > 3 || nb > 3 || time.Now().After(deadline) {
			t.Fatalf("progress seen: the first caller %d, the second %d; want 3 each, on its own stream", na, nb)
		}
	}
}

// Strings of 64 KiB or more cross either face by reference (internal/bulk):
// the face, the tools and the host must share one table. A result's strings
// are lifted by the hosted connection whatever the face, so a face that did
// not lower its writes would hand the caller references instead.
func TestLargeStringsCrossBothFacesWhole(t *testing.T) {
	t.Parallel()
	reg := writeRegistry(t, registryDoc{"warm": {"command": demoBin, "lifecycle": "persistent"}})
	msg := strings.Repeat("0123456789abcdef", 20<<10) // 320 KiB
	h := startHTTPWith(t, "127.0.0.1:0", reg)
	viaHTTP, err := connectHTTP(t, h.url, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { viaHTTP.Close() })
	for face, cs := range map[string]*mcp.ClientSession{"stdio": start(t, reg, nil).cs, "http": viaHTTP} {
		for range 2 { // the warm server's first call, and a later one
			res, err := cs.CallTool(t.Context(), hostedCall("warm", "echo", map[string]any{"message": msg}))
			if err != nil {
				t.Fatalf("%s: %v", face, err)
			}
			if got := textOf(res); res.IsError || got != "Echo: "+msg {
				t.Fatalf("%s: isError %v, %d bytes back (%.60q…), want the echo of %d", face, res.IsError, len(got), got, len(msg))
			}
		}
	}
}

// A FIFO put at the --token-file path after the start makes that SIGHUP's
// reload fail with a message, and a later SIGHUP still reloads: the signal
// loop never waits in open(2) (it used to, and every later SIGHUP was lost).
func TestHostileFIFOTokenFileSIGHUP(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("first-token-abc\n"), 0o600)
	c := startHTTP(t, "127.0.0.1:0", "--token-file", tokens)
	os.Remove(tokens)
	mkfifo(t, dir, "tokens")
	c.cmd.Process.Signal(syscall.SIGHUP)
	for deadline := time.After(5 * time.Second); ; {
		select {
		case line := <-c.logs:
			if !strings.Contains(line, `msg="SIGHUP`) {
				continue
			}
			if !strings.Contains(line, "failed") || !strings.Contains(line, "FIFO") {
				t.Errorf("SIGHUP with a FIFO: %s", line)
			}
		case <-deadline:
			t.Fatal("SIGHUP with a FIFO at the token file logged nothing")
		}
		break
	}
	if code := post(t, c.url, map[string]string{"Authorization": "Bearer first-token-abc"}); code == http.StatusUnauthorized {
		t.Errorf("the tokens in force were dropped: %d", code)
	}
	os.Remove(tokens)
	os.WriteFile(tokens, []byte("second-token-def\n"), 0o600)
	c.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(5 * time.Second)
	for post(t, c.url, map[string]string{"Authorization": "Bearer second-token-def"}) == http.StatusUnauthorized {
		if time.Now().After(deadline) {
			t.Fatal("a SIGHUP after the FIFO did not reload the token file")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Over HTTP too, an 8 MB server name gives an answer under 64 KiB (it was
// 40 MB, and a few such requests at once exhausted a small host).
func TestHostileHTTPEchoClipped(t *testing.T) {
	t.Parallel()
	c := startHTTP(t, "127.0.0.1:0")
	cs, err := connectHTTP(t, c.url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
		Arguments: map[string]any{"server": strings.Repeat("s", 8<<20), "name": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if !res.IsError || len(b) > 64<<10 {
		t.Errorf("isError %v, an answer of %d bytes", res.IsError, len(b))
	}
}

// --allowed-host and COLIBRI_MCP_ALLOWED_HOSTS reach the HTTP face: a
// proxy's public name is served on /mcp and /readyz, another name is not,
// and /readyz keeps to the rule, with a probe's IP literal served; a name
// with a port or scheme is a usage error.
func TestHTTPAllowedHostFlag(t *testing.T) {
	t.Parallel()
	c := startHTTP(t, "127.0.0.1:0", "--allowed-host", "mcp.example.com")
	readyz := strings.TrimSuffix(c.url, "/mcp") + "/readyz"
	for host, ok := range map[string]bool{"mcp.example.com": true, "mcp.example.com:443": true, "other.example.com": false} {
		if code := post(t, c.url, map[string]string{"Host": host}); (code != http.StatusForbidden) != ok {
			t.Errorf("/mcp with Host %s: %d", host, code)
		}
		if code := getStatus(t, readyz, host); (code != http.StatusForbidden) != ok {
			t.Errorf("/readyz with Host %s: %d", host, code)
		}
	}
	if code := getStatus(t, readyz, "10.0.0.9:8080"); code == http.StatusForbidden {
		t.Errorf("/readyz with an IP-literal Host: %d", code)
	}
	cmd := exec.Command(colibriBin, "serve", "--http", "127.0.0.1:0", "--external-config", writeRegistry(t, nil))
	cmd.Env = append(cmd.Environ(), "COLIBRI_MCP_ALLOWED_HOSTS=mcp.example.com,https://mcp.example.com")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "COLIBRI_MCP_ALLOWED_HOSTS") {
		t.Errorf("a bad COLIBRI_MCP_ALLOWED_HOSTS: exit %d:\n%s", cmd.ProcessState.ExitCode(), out)
	}
}

// getStatus is the status of GET url with the given Host.
func getStatus(t *testing.T, url, host string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
