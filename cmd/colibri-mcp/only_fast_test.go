package main

// serve --only's fast path (tools/only_fast.go): a warm tools/call of a
// stdio caller relayed below go-sdk's sessions, with the caller's ids,
// cancellation, progress, the gate and the audit line as on go-sdk's path.
// A raw client writes the lines, so that the ids are the test's own.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
)

// rawOnly is colibri-mcp serve --only over pipes, spoken to line by line.
type rawOnly struct {
	t     *testing.T
	in    io.WriteCloser
	logs  *lockedWriter
	mu    sync.Mutex
	lines []map[string]json.RawMessage // every message colibri wrote, in order
}

// What colibri logs of a call answered on the fast path: relayed as the
// server wrote it, or answered by colibri (a refusal) without go-sdk.
const (
	fastRelayed  = `msg="tools/call answered on serve --only's fast path" server=s tool=%s relayed=true`
	fastAnswered = `msg="tools/call answered on serve --only's fast path" server=s tool=%s relayed=false`
)

func startRawOnly(t *testing.T, reg string, extra ...string) *rawOnly {
	t.Helper()
	return startRawOnlyOffering(t, "{}", reg, extra...)
}

// startRawOnlyOffering is startRawOnly with the client capabilities caps
// (their JSON).
func startRawOnlyOffering(t *testing.T, caps, reg string, extra ...string) *rawOnly {
	t.Helper()
	args := append([]string{"serve", "--only", "s", "--external-config", reg, "--log-level", "debug", "--timeout", "20s"}, extra...)
	cmd := exec.Command(colibriBin, args...)
	cmd.Env = append(os.Environ(), pinEnv(t))
	r := &rawOnly{t: t, logs: &lockedWriter{w: &strings.Builder{}}}
	cmd.Stderr = r.logs
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.in = in
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("colibri wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			r.mu.Lock()
			r.lines = append(r.lines, m)
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"raw","version":"1"}}}`)
	r.answer(`"init"`)
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

// warm makes one call and waits for it: the warm process started, and
// what a 2026-07-28 server's session must learn from go-sdk's first
// request on it (the per-request _meta) learnt, so that the calls after it
// take the fast path.
func (r *rawOnly) warm() {
	r.t.Helper()
	r.send(`{"jsonrpc":"2.0","id":"warm","method":"tools/call","params":{"name":"echo","arguments":{"message":"warm"}}}`)
	r.answer(`"warm"`)
}

// logged reports whether colibri's log comes to hold line: its stderr is
// read apart from its stdout, so a line logged before an answer may be
// read after the answer (under load, it was).
func (r *rawOnly) logged(line string) bool {
	return testwait.Soon(func() bool { return strings.Contains(r.logs.String(), line) })
}

func (r *rawOnly) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// answer waits for the answer under id (its JSON), and returns it.
func (r *rawOnly) answer(id string) map[string]json.RawMessage {
	r.t.Helper()
	var got map[string]json.RawMessage
	testwait.Eventually(r.t, "the answer to id "+id, func() bool {
		got = r.find(func(m map[string]json.RawMessage) bool { return string(m["id"]) == id && m["method"] == nil })
		return got != nil
	})
	return got
}

func (r *rawOnly) find(match func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.lines {
		if match(m) {
			return m
		}
	}
	return nil
}

func (r *rawOnly) count(match func(map[string]json.RawMessage) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.lines {
		if match(m) {
			n++
		}
	}
	return n
}

// text is the first text content of a tools/call answer.
func resultText(t *testing.T, m map[string]json.RawMessage) (string, bool) {
	t.Helper()
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(m["result"], &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("not a tools/call result: %s", m["result"])
	}
	return res.Content[0].Text, res.IsError
}

func fastRegistry(t *testing.T, extra map[string]any) string {
	t.Helper()
	entry := map[string]any{"command": fakeBin, "args": []string{"ok"}, "lifecycle": "persistent"}
	for k, v := range extra {
		entry[k] = v
	}
	return writeRegistry(t, registryDoc{"s": entry})
}

// The caller's ids come back as it wrote them, a string and a number, and
// answers of calls in flight together never trade places; the calls were
// relayed below go-sdk (the log says so for each).
func TestOnlyFastPathKeepsIDs(t *testing.T) {
	t.Parallel()
	r := startRawOnly(t, fastRegistry(t, nil), "--external-call")
	r.warm()
	ids := []string{`"a"`, `7`, `"colibri-direct-1"`, `-3`, `"x y"`}
	for i, id := range ids {
		// The first waits longest: the answers come back out of order.
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"mirror","arguments":{"ms":%d,"n":%d}}}`, id, 200-40*i, i))
	}
	for i, id := range ids {
		text, isErr := resultText(t, r.answer(id))
		if want := fmt.Sprintf(`{"ms":%d,"n":%d}`, 200-40*i, i); isErr || text != want {
			t.Errorf("id %s: answer %q (isError %v), want %q", id, text, isErr, want)
		}
	}
	relayed := fmt.Sprintf(fastRelayed, "mirror")
	testwait.Soon(func() bool { return strings.Count(r.logs.String(), relayed) >= len(ids) })
	if n := strings.Count(r.logs.String(), relayed); n != len(ids) {
		t.Errorf("%d of %d calls were relayed below go-sdk\n%s", n, len(ids), r.logs)
	}
	// What the fast path leaves to go-sdk is answered as before: a call
	// without params, or with params that are not an object.
	r.send(`{"jsonrpc":"2.0","id":"n","method":"tools/call","params":null}`)
	r.send(`{"jsonrpc":"2.0","id":"arr","method":"tools/call","params":[1]}`)
	for _, id := range []string{`"n"`, `"arr"`} {
		if m := r.answer(id); m["error"] == nil {
			t.Errorf("id %s: answered %s, want an error", id, m["result"])
		}
	}
	// An id may be used again once its call is answered.
	r.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"again"}}}`)
	testwait.Eventually(t, "the second answer under id 7", func() bool {
		return r.count(func(m map[string]json.RawMessage) bool { return string(m["id"]) == "7" }) == 2
	})
}

// A call the caller cancels is cancelled on the hosted server too (it is
// told, under colibri's id for the call) and gets no answer; the id is free
// again.
func TestOnlyFastPathCancels(t *testing.T) {
	t.Parallel()
	r := startRawOnly(t, fastRegistry(t, nil), "--external-call")
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"warm"}}}`)
	r.answer("1")
	started := filepath.Join(t.TempDir(), "started")
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":20000,"started":%q}}}`, started))
	testwait.Eventually(t, "the hosted call to start", func() bool { _, err := os.Stat(started); return err == nil })
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"changed my mind"}}`)
	testwait.Eventually(t, "the hosted server to cancel its call", func() bool { return strings.Contains(r.logs.String(), "sleep: cancelled") })
	// The id is free once colibri is done with the cancelled call (its
	// handler has returned, which the hosted server's word does not say):
	// a call under it before then is refused as a duplicate, under a null
	// id, and is sent again. Then it is answered, the only answer under it.
	again := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"after"}}}`
	inUse := func(m map[string]json.RawMessage) bool {
		return string(m["id"]) == "null" && strings.Contains(string(m["error"]), "id 2 is already used by a request in flight")
	}
	refused := 0
	r.send(again)
	testwait.Eventually(t, "an answer under id 2 once the cancelled call has ended", func() bool {
		if r.find(func(m map[string]json.RawMessage) bool { return string(m["id"]) == "2" && m["method"] == nil }) != nil {
			return true
		}
		if n := r.count(inUse); n > refused {
			refused = n
			r.send(again)
		}
		return false
	})
	if text, _ := resultText(t, r.answer("2")); text != "Echo: after" {
		t.Errorf("the call after the cancelled one was answered %q", text)
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"last"}}}`)
	r.answer("3")
	if n := r.count(func(m map[string]json.RawMessage) bool { return string(m["id"]) == "2" }); n != 1 {
		t.Errorf("%d answers under id 2, want 1 (the cancelled call answered nothing)", n)
	}
	if !r.logged(fmt.Sprintf(fastRelayed, "echo")) {
		t.Errorf("no call was relayed below go-sdk\n%s", r.logs)
	}
}

// Progress of a relayed call reaches the caller under its own token,
// before the answer.
func TestOnlyFastPathProgress(t *testing.T) {
	t.Parallel()
	r := startRawOnly(t, fastRegistry(t, nil), "--external-call")
	r.warm()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"mine"}}}`)
	if text, _ := resultText(t, r.answer("1")); text != "3 steps" {
		t.Fatalf("answer %q", text)
	}
	r.mu.Lock()
	var tokens []string
	for _, m := range r.lines {
		if string(m["method"]) == `"notifications/progress"` {
			var p struct {
				Token any `json:"progressToken"`
			}
			json.Unmarshal(m["params"], &p)
			tokens = append(tokens, fmt.Sprint(p.Token))
		}
	}
	r.mu.Unlock()
	if len(tokens) == 0 {
		t.Fatal("no progress reached the caller")
	}
	for _, tok := range tokens {
		if tok != "mine" {
			t.Errorf("progress under token %q, want the caller's %q", tok, "mine")
		}
	}
	if !r.logged(fmt.Sprintf(fastRelayed, "progress")) {
		t.Errorf("the call was not relayed below go-sdk\n%s", r.logs)
	}
}

// The gate, the policy and the schema check refuse on the fast path as on
// go-sdk's, and the audit line is written for each call, with the result's
// size for the relayed one.
func TestOnlyFastPathRefusesAndAudits(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.log")
	off := startRawOnly(t, fastRegistry(t, nil), "--audit-log", audit) // no --external-call
	off.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`)
	if text, isErr := resultText(t, off.answer("1")); !isErr || !strings.Contains(text, "call_disabled") {
		t.Errorf("the gate off: %q (isError %v)", text, isErr)
	}
	r := startRawOnly(t, fastRegistry(t, map[string]any{"policy": map[string]any{"tools": map[string]any{"deny": []string{"sleep"}}}}), "--external-call", "--audit-log", audit)
	r.warm()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1}}}`)
	if text, isErr := resultText(t, r.answer("1")); !isErr || !strings.Contains(text, "denied") {
		t.Errorf("a denied tool: %q (isError %v)", text, isErr)
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":5}}}`)
	if text, isErr := resultText(t, r.answer("2")); !isErr || !strings.Contains(text, "invalid_arguments") {
		t.Errorf("arguments the schema rejects: %q (isError %v)", text, isErr)
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"fine"}}}`)
	answer := r.answer("3")
	if text, _ := resultText(t, answer); text != "Echo: fine" {
		t.Errorf("an allowed call: %q", text)
	}
	if !r.logged(fmt.Sprintf(fastRelayed, "echo")) {
		t.Errorf("the allowed call was not relayed below go-sdk\n%s", r.logs)
	}
	// The refusals were the fast path's too, answered by colibri.
	if !off.logged(fmt.Sprintf(fastAnswered, "echo")) || !r.logged(fmt.Sprintf(fastAnswered, "sleep")) {
		t.Errorf("the refusals were not answered on the fast path\n%s\n%s", off.logs, r.logs)
	}
	var outcomes []string
	testwait.Eventually(t, "five audit lines", func() bool {
		b, _ := os.ReadFile(audit)
		outcomes = nil
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var rec struct {
				Outcome     string `json:"outcome"`
				ErrorKind   string `json:"error_kind"`
				ResultBytes *int   `json:"result_bytes"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Outcome != "" {
				o := rec.Outcome + "/" + rec.ErrorKind
				if rec.ResultBytes != nil {
					o += fmt.Sprintf("/%d", *rec.ResultBytes)
				}
				outcomes = append(outcomes, o)
			}
		}
		return len(outcomes) == 5
	})
	outcomes = append(outcomes[:1], outcomes[2:]...) // the warm-up call's
	want := fmt.Sprintf("ok//%d", len(answer["result"]))
	if outcomes[0] != "error/call_disabled" || outcomes[1] != "denied/denied" || outcomes[2] != "error/invalid_arguments" || outcomes[3] != want {
		t.Errorf("audit outcomes %v, want error/call_disabled, denied/denied, error/invalid_arguments, %s", outcomes, want)
	}
}

// A server's sampling request during a relayed call reaches the caller,
// and its answer the server, which ends the call with it.
func TestOnlyFastPathSampling(t *testing.T) {
	t.Parallel()
	reg := writeRegistry(t, registryDoc{"s": {"command": fakeBin, "args": []string{"ask-caller"}, "lifecycle": "persistent"}})
	r := startRawOnlyOffering(t, `{"sampling":{}}`, reg, "--external-call")
	r.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	var asked map[string]json.RawMessage
	testwait.Eventually(t, "the server's sampling request to reach the caller", func() bool {
		asked = r.find(func(m map[string]json.RawMessage) bool { return string(m["method"]) == `"sampling/createMessage"` })
		return asked != nil
	})
	r.send(`{"jsonrpc":"2.0","id":` + string(asked["id"]) + `,"result":{"role":"assistant","content":{"type":"text","text":"yes"},"model":"m"}}`)
	if text, isErr := resultText(t, r.answer("5")); isErr || !strings.Contains(text, "answered:") || !strings.Contains(text, "yes") {
		t.Errorf("the call after sampling: %q (isError %v)", text, isErr)
	}
	if !r.logged(fmt.Sprintf(fastRelayed, "ask")) {
		t.Errorf("the call was not relayed below go-sdk\n%s", r.logs)
	}
}

// A result go-sdk's client reads only by normalising it (null, a null
// content or isError, no content, a text block without text) reaches the
// caller as go-sdk's path gives it — side by side with a per-request entry
// of the same server, which takes that path — not as the server wrote it:
// a strict client (the TypeScript SDK's schema) refuses a null content or
// isError. The warm process stays: a null result was a crash once, and the
// server was started again.
func TestOnlyFastPathNormalisesAsGoSDK(t *testing.T) {
	t.Parallel()
	pids := t.TempDir() // the warm side's processes
	entry := func(lifecycle, pids string) string {
		return writeRegistry(t, registryDoc{"s": {"command": fakeBin, "args": []string{"bad-result"}, "lifecycle": lifecycle,
			"env": map[string]any{"FAKEMCP_PIDS": pids}}})
	}
	fast, sdk := startRawOnly(t, entry("persistent", pids), "--external-call"), startRawOnly(t, entry("per_request", t.TempDir()), "--external-call")
	fast.send(`{"jsonrpc":"2.0","id":"warm","method":"tools/call","params":{"name":"any","arguments":{}}}`)
	fast.answer(`"warm"`)
	for i, tc := range []struct{ shape, want string }{
		{"null", `{"content":[]}`},
		{"content-null", `{"content":[]}`},
		{"members-null", `{"content":[{"type":"text","text":"x"}]}`},
		{"empty", `{"content":[]}`},
		{"no-text", `{"content":[{"type":"text","text":""}],"isError":true}`},
	} {
		before, _ := os.ReadDir(pids)
		call := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"any","arguments":{"shape":%q}}}`, i+1, tc.shape)
		fast.send(call)
		got := string(fast.answer(fmt.Sprint(i + 1))["result"])
		if after, _ := os.ReadDir(pids); len(after) != len(before) {
			t.Errorf("%s: %d processes started for the warm call, want none (the warm one answered)", tc.shape, len(after)-len(before))
		}
		sdk.send(call)
		want := string(sdk.answer(fmt.Sprint(i + 1))["result"])
		if got != tc.want || want != tc.want {
			t.Errorf("%s: the fast path answers %s, go-sdk's path %s; want both %s", tc.shape, got, want, tc.want)
		}
	}
	if !fast.logged(fmt.Sprintf(fastAnswered, "any")) {
		t.Errorf("the calls did not take the fast path\n%s", fast.logs)
	}
}

// A hosted result go-sdk's client refuses to read (a content block of no
// type MCP defines, a null block, text that is not a string, content that
// is not a list) fails the call on the fast path as it does on go-sdk's
// (the server broke the protocol): the caller is never relayed what the
// session path would not give it. Each shape has a colibri of its own (a
// failed call counts against the server's restarts).
func TestOnlyFastPathRefusesUnreadableResults(t *testing.T) {
	t.Parallel()
	reg := writeRegistry(t, registryDoc{"s": {"command": fakeBin, "args": []string{"bad-result"}, "lifecycle": "persistent"}})
	for _, shape := range []string{"unknown-type", "null-block", "text-number", "content-str"} {
		r := startRawOnly(t, reg, "--external-call")
		r.send(`{"jsonrpc":"2.0","id":"warm","method":"tools/call","params":{"name":"any","arguments":{}}}`)
		if text, isErr := resultText(t, r.answer(`"warm"`)); isErr || text != "fine" {
			t.Fatalf("a fine result: %q (isError %v)", text, isErr)
		}
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"any","arguments":{"shape":%q}}}`, shape))
		got := r.answer("1")
		if res := string(got["result"]); strings.Contains(res, `"relayed"`) || strings.Contains(res, `"type":"bogus"`) || strings.Contains(res, `"text":5`) {
			t.Errorf("%s: relayed as the server wrote it: %s", shape, res)
			continue
		}
		if text, isErr := resultText(t, got); !isErr || !strings.HasPrefix(text, "colibri: crashed:") {
			t.Errorf("%s: %q (isError %v), want colibri: crashed: (the server broke the protocol)", shape, text, isErr)
		}
		if !r.logged(fmt.Sprintf(fastAnswered, "any")) {
			t.Errorf("%s: the call did not take the fast path\n%s", shape, r.logs)
		}
	}
}
