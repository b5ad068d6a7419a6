package main

//lint:file-ignore SA1019 the tests watch the hosted server's own log lines, which serve --only relays at the level a caller sets (deprecated, not removed, in 2026-07-28).

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
)

// The books of serve --only's subscriptions over HTTP, against the real
// server-everything, warm: a session that ends gives back what it held, a
// held subscription keeps the warm process, and a 2026-07-28 caller's
// unsubscribe reaches the server. (Each was broken: found by a hostile
// review.)

const subscribedURI = "demo://resource/static/document/architecture.md"

func subscriber(t *testing.T, url, version string, n *notes) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "subscriber", Version: "1"}, n.options()).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{}, DisableStandaloneSSE: version >= "2026-07-28"},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// hostedLogs follows the hosted server's own log lines that reach the
// session n is the notes of (at level debug).
type hostedLogs struct {
	n    *notes
	seen []string
}

// saw waits for a hosted log line holding want, within testwait's bound.
func (h *hostedLogs) saw(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(testwait.Bound)
	for {
		for _, l := range h.seen {
			if strings.Contains(l, want) {
				return
			}
		}
		select {
		case p := <-h.n.logs:
			h.seen = append(h.seen, fmt.Sprint(p.Data))
		case <-deadline:
			t.Fatalf("the hosted server never logged %q; it logged:\n%s", want, strings.Join(h.seen, "\n"))
		}
	}
}

func warmEverything(t *testing.T, idleMS int) *httpColibri {
	t.Helper()
	e := everything(t)
	e["everything"]["lifecycle"] = "persistent"
	if idleMS > 0 {
		e["everything"]["idle_timeout_ms"] = idleMS
	}
	return startHTTPWith(t, "127.0.0.1:0", writeRegistry(t, e), "--only", "everything", "--log-level", "debug")
}

// A session that ends (DELETE) drops its subscriptions from colibri's
// books, and the hosted server is told resources/unsubscribe: a session
// that held the caller's 1,024 had locked every later session of the
// caller out of subscribing until colibri restarted.
func TestOnlyHTTPEndedSessionDropsItsSubscriptions(t *testing.T) {
	t.Parallel()
	c := warmEverything(t, 0)
	ctx := t.Context()
	a := subscriber(t, c.url, "2025-11-25", newNotes())
	for i := range 1024 {
		if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: fmt.Sprintf("demo://colibri-test/%d", i)}); err != nil {
			t.Fatalf("subscribe %d: %v", i, err)
		}
	}
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: subscribedURI}); err == nil || !strings.Contains(err.Error(), "too_large") {
		t.Fatalf("the 1,025th subscription: %v, want too_large (the bound this test relies on)", err)
	}
	watcher := newNotes()
	w := subscriber(t, c.url, "2025-11-25", watcher)
	if err := w.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	logs := &hostedLogs{n: watcher}
	logs.saw(t, "Received Unsubscribe Resource request: demo://colibri-test/")
	if err := w.Subscribe(ctx, &mcp.SubscribeParams{URI: subscribedURI}); err != nil {
		t.Errorf("another session's subscribe, once the session holding 1,024 ended: %v", err)
	}
}

// A warm process a caller holds a subscription on is not closed when it
// idles (it alone would send the updates): the subscriber gets them after
// an idle period has passed; once it unsubscribes, the process idles out.
func TestOnlyHTTPSubscriptionKeepsTheWarmServer(t *testing.T) {
	t.Parallel()
	c := warmEverything(t, 300)
	ctx := t.Context()
	n := newNotes()
	a := subscriber(t, c.url, "2025-11-25", n)
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: subscribedURI}); err != nil {
		t.Fatal(err)
	}
	c.waitLog(t, "warm server idle, kept: a caller holds a subscription on it")
	if res := call(t, a, "toggle-subscriber-updates", nil); res.IsError {
		t.Fatalf("toggle-subscriber-updates: %v", res.Content)
	}
	waitUpdated(t, n, "after the warm process's idle period, though the caller holds its subscription")
	if res := call(t, a, "toggle-subscriber-updates", nil); res.IsError { // off again: the process may idle
		t.Fatalf("toggle-subscriber-updates: %v", res.Content)
	}
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: subscribedURI}); err != nil {
		t.Fatal(err)
	}
	c.waitLog(t, "warm server idle; closing it")
}

// A 2026-07-28 caller's subscription ends when its subscriptions/listen
// does (go-sdk unsubscribes after that request's context is done): the
// hosted server is told all the same. (The unsubscribe was sent on the
// ended context, and failed "cancelled".)
func TestOnlyHTTPModernUnsubscribeReachesTheServer(t *testing.T) {
	t.Parallel()
	c := warmEverything(t, 0)
	ctx := t.Context()
	watcher := newNotes()
	w := subscriber(t, c.url, "2025-11-25", watcher)
	if err := w.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	m := subscriber(t, c.url, "2026-07-28", newNotes())
	if err := m.Subscribe(ctx, &mcp.SubscribeParams{URI: subscribedURI}); err != nil {
		t.Fatal(err)
	}
	logs := &hostedLogs{n: watcher}
	logs.saw(t, "Received Subscribe Resource request for URI: "+subscribedURI)
	if err := m.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: subscribedURI}); err != nil {
		t.Fatal(err)
	}
	logs.saw(t, "Received Unsubscribe Resource request: "+subscribedURI)
}

// waitLog waits for a line of colibri's log holding want, within
// testwait's bound (the lines before it are read and let go).
func (c *httpColibri) waitLog(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(testwait.Bound)
	for {
		select {
		case l := <-c.logs:
			if strings.Contains(l, want) {
				return
			}
		case <-deadline:
			t.Fatalf("colibri never logged %q", want)
		}
	}
}

// A registry edit retires the warm process a subscription was made on:
// the caller's next subscribe of the URI is passed on to the process that
// replaces it (colibri's books said it was in place, and the updates
// never came back), and the updates come.
func TestOnlyHTTPSubscriptionOutlivesARetiredProcess(t *testing.T) {
	t.Parallel()
	e := everything(t)
	e["everything"]["lifecycle"] = "persistent"
	reg := writeRegistry(t, e)
	c := startHTTPWith(t, "127.0.0.1:0", reg, "--only", "everything", "--log-level", "debug")
	ctx := t.Context()
	n := newNotes()
	a := subscriber(t, c.url, "2025-11-25", n)
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: subscribedURI}); err != nil {
		t.Fatal(err)
	}
	// The entry's environment edited: its warm process is retired at the
	// next request, which starts another.
	e["everything"]["env"] = map[string]any{"FROM_REGISTRY": "edited"}
	rewriteRegistry(t, reg, e)
	if res := call(t, a, "echo", map[string]any{"message": "retire the old process"}); res.IsError {
		t.Fatalf("echo: %v", res.Content)
	}
	// The caller subscribes nothing again: colibri makes the subscription
	// on the process that replaced the retired one, and says the resource
	// may have changed meanwhile.
	waitUpdated(t, n, "when the subscription was made again on the process that replaced the retired one")
	if res := call(t, a, "toggle-subscriber-updates", nil); res.IsError {
		t.Fatalf("toggle-subscriber-updates: %v", res.Content)
	}
	waitUpdated(t, n, "from the process that replaced the retired one, without subscribing again")
}

// crashingSubscriptions is serve --only over HTTP on the subscribe-crash
// fake, with env for it; subs reads the subscribes its processes were
// sent, one a line: "subscribe", the URI, the process's pid.
func crashingSubscriptions(t *testing.T, env map[string]any) (c *httpColibri, subs func() [][]string) {
	t.Helper()
	c, _, subs = crashingSubscriptionsIn(t, registryDoc{"c": {"env": env}})
	return c, subs
}

// crashingSubscriptionsIn is crashingSubscriptions with doc's entry "c"
// (its command, args, lifecycle and FAKEMCP_SUBS set here), and says
// where its registry is.
func crashingSubscriptionsIn(t *testing.T, doc registryDoc) (c *httpColibri, reg string, subs func() [][]string) {
	t.Helper()
	record := filepath.Join(t.TempDir(), "subs")
	entry := doc["c"]
	if entry["env"] == nil {
		entry["env"] = map[string]any{}
	}
	entry["env"].(map[string]any)["FAKEMCP_SUBS"] = record
	entry["command"], entry["args"], entry["lifecycle"] = fakeBin, []string{"subscribe-crash"}, "persistent"
	reg = writeRegistry(t, doc)
	c = startHTTPWith(t, "127.0.0.1:0", reg, "--only", "c", "--external-call", "--log-level", "debug")
	return c, reg, func() [][]string {
		b, _ := os.ReadFile(record)
		var lines [][]string
		for l := range strings.Lines(string(b)) {
			lines = append(lines, strings.Fields(l))
		}
		return lines
	}
}

// The process a subscription was made on crashes: colibri makes the
// subscription again on the process that replaces it, tells the caller
// the resource may have changed, and the new process's updates reach the
// caller, who subscribed once. (The caller was told nothing, and got no
// update ever again, until it subscribed anew.)
func TestOnlyHTTPSubscriptionRemadeAfterACrash(t *testing.T) {
	t.Parallel()
	c, subs := crashingSubscriptions(t, map[string]any{})
	ctx := t.Context()
	n := newNotes()
	a := subscriber(t, c.url, "2025-11-25", n)
	const uri = "test://crash/a"
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if res := call(t, a, "crash", nil); res.IsError {
		t.Fatalf("crash: %v", res.Content[0].(*mcp.TextContent).Text)
	}
	waitUpdatedOf(t, n, uri, "when the subscription was made again after the crash")
	lines := subs()
	if len(lines) != 2 || lines[0][1] != uri || lines[1][1] != uri || lines[0][2] == lines[1][2] {
		t.Fatalf("the server's processes were sent %v, want a subscribe of %s on each of two processes", lines, uri)
	}
	if res := call(t, a, "update", nil); res.IsError {
		t.Fatalf("update: %v", res.Content)
	}
	waitUpdatedOf(t, n, uri, "from the process that replaced the crashed one")
}

// The policy decides again: a URI that an edit of the registry denies the
// caller since it subscribed is not subscribed again on the process that
// replaces a crashed one, and the caller is told to read it again (and is
// refused).
func TestOnlyHTTPSubscriptionNotRemadeWhenDenied(t *testing.T) {
	t.Parallel()
	doc := registryDoc{"c": {}}
	c, reg, subs := crashingSubscriptionsIn(t, doc)
	ctx := t.Context()
	n := newNotes()
	a := subscriber(t, c.url, "2025-11-25", n)
	const uri = "test://crash/denied"
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	doc["c"]["policy"] = map[string]any{"resources": map[string]any{"deny": []string{"test://crash/*"}}}
	rewriteRegistry(t, reg, doc)
	if res := call(t, a, "crash", nil); res.IsError {
		t.Fatalf("crash: %v", res.Content[0].(*mcp.TextContent).Text)
	}
	waitUpdatedOf(t, n, uri, "when the subscription was not made again")
	deadline := time.After(testwait.Bound)
	for {
		select {
		case l := <-c.logs:
			if !strings.Contains(l, "could not be made again") {
				continue
			}
			if !strings.Contains(l, "denied") {
				t.Errorf("the warning does not say the policy denied it: %s", l)
			}
			if lines := subs(); len(lines) != 1 {
				t.Errorf("the server's processes were sent %v, want the caller's subscribe alone", lines)
			}
			return
		case <-deadline:
			t.Fatal("no warning that the subscription could not be made again")
		}
	}
}

// A server that dies again after each time its subscription is made is
// not started over and over: the subscription is made again maxRemakes
// (3) times in a minute, then dropped, with a warning, and the caller is
// told to read again; its next subscribe is passed on.
func TestOnlyHTTPSubscriptionNotRemadeForever(t *testing.T) {
	t.Parallel()
	c, subs := crashingSubscriptions(t, map[string]any{})
	ctx := t.Context()
	n := newNotes()
	a := subscriber(t, c.url, "2025-11-25", n)
	const uri = "test://crash/often"
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if res := call(t, a, "crash", nil); res.IsError {
			t.Fatalf("crash %d: %v", i+1, res.Content[0].(*mcp.TextContent).Text)
		}
		// Made again (i < 3), or given up (the fourth): told either way.
		waitUpdatedOf(t, n, uri, fmt.Sprintf("after crash %d", i+1))
	}
	c.waitLog(t, "was made again too often")
	if lines := subs(); len(lines) != 4 {
		t.Fatalf("the server's processes were sent %d subscribes (%v), want the caller's and 3 made again", len(lines), lines)
	}
	// Given up: the caller's next subscribe is passed on.
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if lines := subs(); len(lines) != 5 {
		t.Fatalf("after the caller subscribed again the server's processes were sent %d subscribes, want 5", len(lines))
	}
}

// A server that dies as soon as it has answered each subscribe: making the
// subscription again stops within a few processes (the pool's circuit
// opens after three failures in a row, or the bound of making it again is
// reached), with a warning, and nothing more is started for it.
func TestOnlyHTTPSubscriptionCrashLoopBounded(t *testing.T) {
	t.Parallel()
	c, subs := crashingSubscriptions(t, map[string]any{"FAKEMCP_CRASH_ON_SUBSCRIBE": "1"})
	ctx := t.Context()
	a := subscriber(t, c.url, "2025-11-25", newNotes())
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://crash/always"}); err != nil {
		t.Fatal(err)
	}
	c.waitLog(t, "a subscription ended with its process and")
	n := len(subs())
	if n < 2 || n > 4 {
		t.Fatalf("the server's processes were sent %d subscribes (%v), want the caller's and at most 3 made again", n, subs())
	}
	// Nothing is made again after the warning: a request served after it
	// finds no more subscribes sent.
	if _, err := a.ListResources(ctx, nil); err != nil && !strings.Contains(err.Error(), "unavailable") {
		t.Fatal(err)
	}
	if m := len(subs()); m != n {
		t.Errorf("%d subscribes were sent after the warning", m-n)
	}
}

// A session holding many subscriptions ends while its server is wedged:
// the unsubscribes colibri sends for it do not keep the idle ping from
// finding the wedge (they ran as requests in flight, one call timeout
// each, and the ping waits for none to be: 60 s here), and stop at the
// first that fails.
func TestOnlyHTTPEndedSubscriptionsDoNotHideAWedge(t *testing.T) {
	t.Parallel()
	reg := writeRegistry(t, registryDoc{"w": {"command": fakeBin, "args": []string{"subscribe-then-wedge"}, "lifecycle": "persistent",
		"keepalive_ms": 200, "timeout_ms": 1000, "call_timeout_ms": 1000}})
	c := startHTTPWith(t, "127.0.0.1:0", reg, "--only", "w", "--log-level", "debug")
	ctx := t.Context()
	a := subscriber(t, c.url, "2025-11-25", newNotes())
	for i := range 60 {
		if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: fmt.Sprintf("test://wedge/%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if res := call(t, a, "any", nil); res.IsError {
		t.Fatal(res.Content)
	}
	a.Close()
	deadline := time.After(20 * time.Second) // 1.2 s or so; 60 s without the fix
	for {
		select {
		case l := <-c.logs:
			if strings.Contains(l, "did not answer ping") {
				return
			}
		case <-deadline:
			t.Fatal("the wedged server was not found by its ping (keepalive 200 ms, timeout 1 s) while the ended session's unsubscribes were sent")
		}
	}
}

// gatedSubscribe is serve --only over HTTP on the gated-subscribe fake:
// a resources/subscribe is answered once open is called; subs reads what
// the server was sent.
func gatedSubscribe(t *testing.T) (c *httpColibri, open func(), subs func() []string) {
	t.Helper()
	dir := t.TempDir()
	record, gate := filepath.Join(dir, "subs"), filepath.Join(dir, "gate")
	reg := writeRegistry(t, registryDoc{"g": {"command": fakeBin, "args": []string{"gated-subscribe"}, "lifecycle": "persistent",
		"env": map[string]any{"FAKEMCP_SUBS": record, "FAKEMCP_GATE": gate}}})
	c = startHTTPWith(t, "127.0.0.1:0", reg, "--only", "g", "--log-level", "debug")
	open = func() {
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	subs = func() []string {
		b, _ := os.ReadFile(record)
		return strings.Fields(string(b))
	}
	return c, open, subs
}

// A subscription given up while its subscribe is on its way (go-sdk runs
// a caller's requests side by side) is ended once the subscribe is
// answered: the server is sent the unsubscribe.
func TestOnlyHTTPUnsubscribeWhileSubscribing(t *testing.T) {
	t.Parallel()
	c, open, subs := gatedSubscribe(t)
	ctx := t.Context()
	a := subscriber(t, c.url, "2025-11-25", newNotes())
	done := make(chan error, 1)
	go func() { done <- a.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://gated"}) }()
	testwait.Eventually(t, "the subscribe on its way", func() bool { return len(subs()) == 1 })
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://gated"}); err != nil {
		t.Fatal(err)
	}
	open()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "the server sent resources/unsubscribe", func() bool { return len(subs()) == 2 })
	if got := strings.Join(subs(), " "); got != "resources/subscribe resources/unsubscribe" {
		t.Errorf("the server was sent %s", got)
	}
}

// Subscribe, unsubscribe and subscribe again, all while the first
// subscribe is on its way: the caller holds the subscription, and the
// server is sent no unsubscribe (it books one subscription a URI; the end
// of the first would have ended the second).
func TestOnlyHTTPSubscribeAgainWhileSubscribing(t *testing.T) {
	t.Parallel()
	c, open, subs := gatedSubscribe(t)
	ctx := t.Context()
	a := subscriber(t, c.url, "2025-11-25", newNotes())
	first, again := make(chan error, 1), make(chan error, 1)
	go func() { first <- a.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://gated"}) }()
	testwait.Eventually(t, "the first subscribe on its way", func() bool { return len(subs()) == 1 })
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://gated"}); err != nil {
		t.Fatal(err)
	}
	go func() { again <- a.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://gated"}) }()
	testwait.Eventually(t, "the second subscribe on its way", func() bool { return len(subs()) == 2 })
	open()
	for _, done := range []chan error{first, again} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// Each subscribe's handler sends what it sends before it returns.
	if got := strings.Join(subs(), " "); got != "resources/subscribe resources/subscribe" {
		t.Errorf("the server was sent %s, want two subscribes and no unsubscribe", got)
	}
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://gated"}); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "the server sent resources/unsubscribe", func() bool { return len(subs()) == 3 })
}

// Two sessions of one caller subscribing to one URI while the first
// subscribe is on its way: the server is sent one subscribe, and one
// unsubscribe when both have unsubscribed.
func TestOnlyHTTPOneSubscriptionPerCallerAndURI(t *testing.T) {
	t.Parallel()
	c, open, subs := gatedSubscribe(t)
	ctx := t.Context()
	a := subscriber(t, c.url, "2025-11-25", newNotes())
	b := subscriber(t, c.url, "2025-11-25", newNotes())
	done := make(chan error, 1)
	go func() { done <- a.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://gated"}) }()
	testwait.Eventually(t, "the subscribe on its way", func() bool { return len(subs()) == 1 })
	if err := b.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://gated"}); err != nil {
		t.Fatal(err)
	}
	open()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, s := range []*mcp.ClientSession{a, b} {
		if err := s.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://gated"}); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Eventually(t, "the server sent resources/unsubscribe", func() bool { return len(subs()) >= 2 })
	if got := strings.Join(subs(), " "); got != "resources/subscribe resources/unsubscribe" {
		t.Errorf("the server was sent %s, want one subscribe and one unsubscribe", got)
	}
}

// waitUpdated waits for notifications/resources/updated of subscribedURI
// on the session n is the notes of, within testwait's bound.
func waitUpdated(t *testing.T, n *notes, when string) {
	t.Helper()
	waitUpdatedOf(t, n, subscribedURI, when)
}

// waitUpdatedOf is waitUpdated of uri.
func waitUpdatedOf(t *testing.T, n *notes, uri, when string) {
	t.Helper()
	select {
	case got := <-n.updated:
		if got != uri {
			t.Errorf("updated %q, want %q", got, uri)
		}
	case <-time.After(testwait.Bound):
		t.Fatal("no update " + when)
	}
}

// rewriteRegistry writes doc over the registry at reg, its mtime changed
// whatever the clock's grain, so that colibri reads it again at the next
// request.
func rewriteRegistry(t *testing.T, reg string, doc registryDoc) {
	t.Helper()
	b, err := os.ReadFile(writeRegistry(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(reg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(reg, later, later); err != nil {
		t.Fatal(err)
	}
}
