package tools_test

// The HTTP face serves MCP 2026-07-28 (no initialize, no session) and
// 2025-11-25 (sessions) on the same /mcp, with the same tokens,
// principals, policy, audit and bounds.

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/httpserve"
	"github.com/colibri-mcp/colibri-mcp/policy"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// twoVersionFace is serve --http with a token file ("alice" and "bob"),
// aggregate mode, an audit log and a policy that hides echo from bob.
func twoVersionFace(t *testing.T, maxSessions int) (url, auditPath string) {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("alice alice-token-0123456789\nbob bob-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auditPath, w := tempAudit(t)
	h := host.New(host.Options{Timeout: 10 * time.Second, TerminateGrace: 200 * time.Millisecond})
	ok := &registry.Server{Name: "ok", Command: fakeBin, Args: []string{"ok"},
		Policy: &policy.Policy{Callers: map[string]*policy.Set{"bob": {Tools: &policy.Globs{Deny: []string{"echo"}}}}}}
	reg := &registry.Registry{Path: "in-memory", Servers: map[string]*registry.Server{"ok": ok}}
	svc := tools.New(tools.Options{Registry: func() (*registry.Registry, error) { return reg, nil }, ConfigPath: "in-memory",
		Host: h, ExternalCall: true, Aggregate: true, RegistryPoll: -1, Audit: w})
	srv, err := httpserve.New(httpserve.Options{Addr: "127.0.0.1:0", Server: svc.NewServer("test"),
		TokenFile: tokens, MaxSessionsPerPrincipal: maxSessions})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-served
		svc.Close()
		h.Close()
	})
	return srv.URL(), auditPath
}

func httpClient(t *testing.T, url, token, version string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, DisableStandaloneSSE: true}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client-" + version, Version: "1"}, nil).
		Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("%s: connect: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %s, want %s", got, version)
	}
	return cs
}

// A go-sdk 2026-07-28 client and a 2025-11-25 client, with the same token,
// make the same call: the same answer, the same audit line.
func TestHTTPServesBothProtocolVersions(t *testing.T) {
	url, auditPath := twoVersionFace(t, 0)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		cs := httpClient(t, url, "alice-token-0123456789", version)
		listed(t, cs) // waits for the hosted lists read at start
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ok__echo", Arguments: map[string]any{"message": "hi"}})
		if err != nil || res.IsError || !strings.Contains(resultText(res), "hi") {
			t.Fatalf("%s: ok__echo: %v %v", version, err, res)
		}
		// bob's own policy hides echo, on either version.
		bob := httpClient(t, url, "bob-token-0123456789", version)
		if listed(t, bob)["ok__echo"] != nil {
			t.Errorf("%s: bob is offered ok__echo", version)
		}
		res, err = bob.CallTool(t.Context(), &mcp.CallToolParams{Name: "ok__echo", Arguments: map[string]any{"message": "hi"}})
		if err != nil || !strings.HasPrefix(resultText(res), "colibri: denied: ") {
			t.Errorf("%s: bob's ok__echo: %v %v", version, err, res)
		}
	}
	// No token: 401, whatever the version.
	tr := &mcp.StreamableClientTransport{Endpoint: url}
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "x", Version: "1"}, nil).Connect(t.Context(), tr, nil); err == nil {
		t.Error("a client without a token connected")
	}

	b, _ := os.ReadFile(auditPath)
	var lines []map[string]any
	for line := range strings.Lines(string(b)) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if c, _ := rec["client"].(map[string]any); c == nil || !strings.HasPrefix(toJSON(c["name"]), `"client-`) {
			t.Errorf("audit line without the client: %s", line)
		}
		// These differ from call to call (result_bytes: a 2026-07-28
		// result also says its resultType).
		for _, k := range []string{"ts", "id", "duration_ms", "client", "result_bytes", "chain", "prev"} {
			delete(rec, k)
		}
		lines = append(lines, rec)
	}
	if len(lines) != 4 {
		t.Fatalf("%d audit lines, want 4:\n%s", len(lines), b)
	}
	for i, want := range map[int]string{0: "alice", 1: "bob"} {
		older, newer := lines[i], lines[i+2]
		ob, _ := json.Marshal(older)
		nb, _ := json.Marshal(newer)
		if string(ob) != string(nb) || older["principal"] != want || older["transport"] != "http" {
			t.Errorf("audit lines of %s differ by version:\n2025-11-25: %s\n2026-07-28: %s", want, ob, nb)
		}
	}
}

// rawModern POSTs one 2026-07-28 request and returns its JSON-RPC answer.
func rawModern(t *testing.T, url, token, body string) (int, map[string]any) {
	t.Helper()
	var m struct {
		Method string
		Params struct{ Name string }
	}
	json.Unmarshal([]byte(body), &m)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Method", m.Method) // 2026-07-28's standard headers
	if m.Params.Name != "" {
		req.Header.Set("Mcp-Name", m.Params.Name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a 2026-07-28 request was given a session")
	}
	var answer map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				json.Unmarshal([]byte(d), &answer)
			}
		}
	} else {
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &answer)
	}
	return resp.StatusCode, answer
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// A raw 2026-07-28 sequence: server/discover, tools/list (private to the
// caller: its policy shapes it), tools/call with _meta; no session.
func TestHTTPRawModernSequence(t *testing.T) {
	url, _ := twoVersionFace(t, 0)
	const token = "alice-token-0123456789"
	code, ans := rawModern(t, url, token, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`)
	res, _ := ans["result"].(map[string]any)
	if code != 200 || res == nil || !strings.Contains(toJSON(res["supportedVersions"]), "2026-07-28") {
		t.Fatalf("server/discover: %d %v", code, ans)
	}
	code, ans = rawModern(t, url, token, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+modernMeta+`}}`)
	res, _ = ans["result"].(map[string]any)
	if code != 200 || res == nil || res["cacheScope"] != "private" || !strings.Contains(toJSON(res["tools"]), `"ok__echo"`) {
		t.Fatalf("tools/list: %d %v", code, ans)
	}
	code, ans = rawModern(t, url, token, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ok__echo","arguments":{"message":"raw"},`+modernMeta+`}}`)
	if code != 200 || !strings.Contains(toJSON(ans["result"]), `raw`) {
		t.Fatalf("tools/call: %d %v", code, ans)
	}
	// A wrong token is refused before anything is read.
	if code, _ := rawModern(t, url, "nope", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{`+modernMeta+`}}`); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
}

// A principal's 2026-07-28 requests in flight count against its cap of
// sessions, as its sessions do.
func TestHTTPModernRequestsShareTheSessionCap(t *testing.T) {
	url, _ := twoVersionFace(t, 1)
	httpClient(t, url, "alice-token-0123456789", "2025-11-25") // alice's one session
	code, ans := rawModern(t, url, "alice-token-0123456789", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
	if code != http.StatusTooManyRequests {
		t.Errorf("alice's 2026-07-28 request beyond her cap: %d %v", code, ans)
	}
	if code, _ := rawModern(t, url, "bob-token-0123456789", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`); code != 200 {
		t.Errorf("bob's request: %d", code)
	}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// A 2026-07-28 caller that advertises elicitation is offered to the hosted
// server, and answers what it asks: a hosted 2026-07-28 server asks colibri
// by input_required, and colibri asks its caller the same way (MRTR both
// ways).
func TestHTTPModernCallerOffersElicitationUpstream(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("alice alice-token-0123456789\n"), 0o600)
	h := host.New(host.Options{Timeout: 10 * time.Second, TerminateGrace: 200 * time.Millisecond})
	reg := &registry.Registry{Path: "in-memory", Servers: map[string]*registry.Server{"m": {Name: "m", Command: fakeBin, Args: []string{"modern-only"}}}}
	svc := tools.New(tools.Options{Registry: func() (*registry.Registry, error) { return reg, nil }, ConfigPath: "in-memory", Host: h, ExternalCall: true, RegistryPoll: -1})
	srv, err := httpserve.New(httpserve.Options{Addr: "127.0.0.1:0", Server: svc.NewServer("test"), TokenFile: tokens})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-served; svc.Close(); h.Close() })
	tr := &mcp.StreamableClientTransport{Endpoint: srv.URL(), HTTPClient: &http.Client{Transport: bearer{"alice-token-0123456789", http.DefaultTransport}}, DisableStandaloneSSE: true}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "modern", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "alice"}}, nil
		},
	}).Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.CallToolTool, Arguments: map[string]any{"server": "m", "name": "seen"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	if got := resultText(res); !strings.Contains(got, "elicitation") {
		t.Errorf("a 2026-07-28 caller's elicitation was not offered upstream: %s", got)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.CallToolTool, Arguments: map[string]any{"server": "m", "name": "ask"}})
	if got := resultText(res); err != nil || res.IsError || !strings.Contains(got, `"accept"`) || !strings.Contains(got, "alice") {
		t.Errorf("the hosted server's elicitation, answered by the caller: %v %s", err, got)
	}
}

// The SSE streams colibri serves (2025-11-25) open with a retry field and
// number their events, so that a dropped stream can be resumed.
func TestHTTPStreamsAreResumable(t *testing.T) {
	url, _ := twoVersionFace(t, 0)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer alice-token-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	if !strings.HasPrefix(body, "retry: 1000\n\n") || !strings.Contains(body, "\nid: ") || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Errorf("stream:\n%s", body)
	}
}
