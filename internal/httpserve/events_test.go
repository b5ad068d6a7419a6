package httpserve

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/instance"
)

// eventIDs are the values of a stream's "id:" fields, in order.
func eventIDs(stream string) []string {
	var ids []string
	for line := range strings.SplitSeq(stream, "\n") {
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// openSession initializes a 2025-11-25 session on base and returns its id
// and initialize's stream.
func openSession(t *testing.T, base string) (session, stream string) {
	t.Helper()
	code, h, body := rawRequest(t, http.MethodPost, base+"/mcp", "", nil, initialize)
	if code != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d %s", code, body)
	}
	session = h.Get("Mcp-Session-Id")
	if code, _, body := rawRequest(t, http.MethodPost, base+"/mcp", "", map[string]string{"Mcp-Session-Id": session},
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", code, body)
	}
	return session, body
}

// A stream's event ids are its instance's, sealed and bound to its session
// (docs/scaling.md): its own instance resumes from one; another instance,
// or this one after a restart, answers 404 (initialize again); a forged id,
// go-sdk's own unsealed form, or another session's id is refused (400).
func TestEventIDsAreTheInstances(t *testing.T) {
	a := start(t, Options{Sealer: instance.New("a")})
	b := start(t, Options{Sealer: instance.New("b")})
	session, initStream := openSession(t, a.base)
	for _, id := range eventIDs(initStream) {
		if !strings.HasPrefix(id, "a~") {
			t.Errorf("initialize's event id %q is not instance a's", id)
		}
	}
	hdr := map[string]string{"Mcp-Session-Id": session}
	code, _, call := rawRequest(t, http.MethodPost, a.base+"/mcp", "", hdr,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	ids := eventIDs(call)
	if code != http.StatusOK || len(ids) < 2 || !strings.Contains(call, `"id":2`) {
		t.Fatalf("tools/call: %d, ids %q:\n%s", code, ids, call)
	}
	priming := ids[0]
	if !strings.HasPrefix(priming, "a~") {
		t.Fatalf("event id %q is not sealed", priming)
	}

	resume := func(base string, header map[string]string, lastEventID string) (int, string) {
		t.Helper()
		h := map[string]string{"Last-Event-ID": lastEventID}
		for k, v := range header {
			h[k] = v
		}
		code, _, body := rawRequest(t, http.MethodGet, base+"/mcp", "", h, "")
		return code, body
	}
	// Its own instance replays what followed the priming event: the answer,
	// its id sealed too.
	code, replay := resume(a.base, hdr, priming)
	if code != http.StatusOK || !strings.Contains(replay, `"id":2`) {
		t.Fatalf("resuming on instance a: %d\n%s", code, replay)
	}
	if got := eventIDs(replay); len(got) != 1 || got[0] != ids[1] {
		t.Errorf("the replayed event's id is %q, want %q (the one sent live)", got, ids[1])
	}

	// Instance b, in a session of its own: not its stream.
	bSession, _ := openSession(t, b.base)
	if code, body := resume(b.base, map[string]string{"Mcp-Session-Id": bSession}, priming); code != http.StatusNotFound || !strings.Contains(body, "another instance") {
		t.Errorf("instance a's event id on instance b: %d %q, want 404 naming another instance", code, body)
	}
	// Instance a after a restart (a new run, same name) reads it as stale.
	restarted := start(t, Options{Sealer: instance.New("a")})
	rSession, _ := openSession(t, restarted.base)
	if code, body := resume(restarted.base, map[string]string{"Mcp-Session-Id": rSession}, priming); code != http.StatusNotFound || !strings.Contains(body, "before a restart") {
		t.Errorf("an earlier run's event id: %d %q, want 404", code, body)
	}

	parts := strings.Split(priming, "~")
	forged := parts[0] + "~" + parts[1] + "~" + parts[2] + "~" + strings.Repeat("A", len(parts[3]))
	otherSession, _ := openSession(t, a.base)
	for _, c := range []struct {
		name, id string
		header   map[string]string
	}{
		{"a forged mac", forged, hdr},
		{"go-sdk's own form", "0_0", hdr},
		{"the id of another session", priming, map[string]string{"Mcp-Session-Id": otherSession}},
	} {
		if code, body := resume(a.base, c.header, c.id); code != http.StatusBadRequest || !strings.Contains(body, "refused") {
			t.Errorf("%s: %d %q, want 400 refused", c.name, code, body)
		}
	}
}

func TestSealEventID(t *testing.T) {
	seal := func(id string) string { return "S(" + id + ")" }
	for _, c := range []struct{ in, want string }{
		{"event: message\nid: x_1\ndata: {}\n\n", "event: message\nid: S(x_1)\ndata: {}\n\n"},
		{"id:x_2\ndata: {}\n\n", "id:S(x_2)\ndata: {}\n\n"},
		{"event: prime\nid: _0\ndata: \n\n", "event: prime\nid: S(_0)\ndata: \n\n"},
		{": ok\n\n", ""},
		{"data: {\"id: no\"}\n\n", ""},
		{"event: message\ndata: {}\nid: late\n\n", ""},
		{"id: unterminated", ""},
	} {
		got, ok := sealEventID([]byte(c.in), seal)
		if string(got) != c.want || ok != (c.want != "") {
			t.Errorf("sealEventID(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
}

// A 2024-11-05 session's endpoint (/sse?sessionid=) begins with the
// instance's name, as a Streamable HTTP session id does: a balancer routes
// its POSTs to the instance that holds its stream (docs/scaling.md).
func TestSSESessionIDNamesTheInstance(t *testing.T) {
	ts := start(t, Options{Sealer: instance.New("web1")})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.base+"/sse", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if !strings.Contains(data, "?sessionid=web1.") {
				t.Errorf("the endpoint %q does not name instance web1", data)
			}
			return
		}
	}
	t.Fatalf("no endpoint event: %v", sc.Err())
}
