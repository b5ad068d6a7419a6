package tools_test

//lint:file-ignore SA1019 the tests answer the sampling that colibri relays on purpose.

// A 2026-07-28 caller is asked what a hosted server asks during a call as
// its protocol defines (MRTR): an input_required result with the hosted
// requests and a requestState, answered by a retry (docs/protocol.md).

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/httpserve"
	"github.com/colibri-mcp/colibri-mcp/internal/instance"
	"github.com/colibri-mcp/colibri-mcp/internal/stdioserve"
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// askService is a service hosting the "ask-caller" fake (a sampling
// request in each call of its tool "ask") as "ask", named instance.
func askService(t *testing.T, name string, callTimeoutMS int64) (*tools.Service, *host.Host) {
	t.Helper()
	svc, h, _ := askServiceAudited(t, name, callTimeoutMS)
	return svc, h
}

// askServiceAudited is askService with an audit log, whose path it returns.
func askServiceAudited(t *testing.T, name string, callTimeoutMS int64) (*tools.Service, *host.Host, string) {
	t.Helper()
	auditPath, w := tempAudit(t)
	h := host.New(host.Options{Timeout: 10 * time.Second, TerminateGrace: 200 * time.Millisecond})
	t.Cleanup(h.Close)
	reg := &registry.Registry{Path: "in-memory", Servers: map[string]*registry.Server{
		"ask": {Name: "ask", Command: fakeBin, Args: []string{"ask-caller"}, CallTimeout: callTimeoutMS}}}
	svc := tools.New(tools.Options{Registry: func() (*registry.Registry, error) { return reg, nil }, ConfigPath: "in-memory",
		Host: h, ExternalCall: true, RegistryPoll: -1, Sealer: instance.New(name), Audit: w})
	t.Cleanup(svc.Close)
	return svc, h, auditPath
}

// sampler answers every sampling request "yes".
func sampler(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "yes"}}, nil
}

// modernClient connects a 2026-07-28 client to svc in-process; manual
// leaves the rounds to the test (go-sdk's client otherwise answers them).
func modernClient(t *testing.T, svc *tools.Service, manual bool) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := svc.NewServer("test").Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := &mcp.ClientOptions{CreateMessageHandler: sampler}
	if manual {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "modern", Version: "1"}, opts).
		Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

var askArgs = map[string]any{"server": "ask", "name": "ask"}

// askCall calls the hosted "ask" with state and answers (none: a first round).
func askCall(t *testing.T, cs *mcp.ClientSession, args map[string]any, state string, answers mcp.InputResponseMap) (*mcp.CallToolResult, error) {
	t.Helper()
	return cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.CallToolTool, Arguments: args, RequestState: state, InputResponses: answers})
}

// firstRound is a first round that the hosted server's sampling request
// ends: its one input request's key and the requestState.
func firstRound(t *testing.T, cs *mcp.ClientSession) (key, state string) {
	t.Helper()
	res, err := askCall(t, cs, askArgs, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("want input_required with one request and a requestState, got %+v", res)
	}
	for k, r := range res.InputRequests {
		if _, ok := r.(*mcp.CreateMessageWithToolsParams); !ok {
			t.Fatalf("input request %q is %T, want a sampling request", k, r)
		}
		key = k
	}
	return key, res.RequestState
}

func yes() mcp.InputResponse {
	return &mcp.CreateMessageWithToolsResult{Model: "m", Role: "assistant", Content: []mcp.Content{&mcp.TextContent{Text: "yes"}}}
}

// go-sdk's own 2026-07-28 client, answering sampling, gets the hosted
// server's answer: it was asked through input_required and its retry.
func TestModernCallerIsAskedByMRTR(t *testing.T) {
	svc, h, auditPath := askServiceAudited(t, "a1", 0)
	cs := modernClient(t, svc, false)
	res := callTool(t, cs, tools.CallToolTool, askArgs)
	if got := resultText(res); res.IsError || !strings.Contains(got, "answered: ") || !strings.Contains(got, `"text":"yes"`) {
		t.Fatalf("the hosted server was not answered by the caller: %s", got)
	}
	testwait.Eventually(t, "the call's process released", func() bool { return h.Processes() == 0 })
	// Each round is a request of the caller's, with its audit line.
	b, _ := os.ReadFile(auditPath)
	if n := strings.Count(string(b), `"tool":"ask"`); n != 2 || strings.Contains(string(b), "error_kind") {
		t.Errorf("want an audit line for each of the 2 rounds, none failed:\n%s", b)
	}
}

// A requestState is bound to what it was issued for: forged, for other
// params, answered short, or of an earlier round, it is refused with
// -32602 naming why; the right retry still completes the call.
func TestModernRequestStateBound(t *testing.T) {
	svc, _ := askService(t, "a1", 0)
	cs := modernClient(t, svc, true)
	key, state := firstRound(t, cs)
	refused := func(what string, args map[string]any, state string, answers mcp.InputResponseMap, want string) {
		t.Helper()
		_, err := askCall(t, cs, args, state, answers)
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, want) {
			t.Errorf("%s: got %v, want -32602 with %q", what, err, want)
		}
	}
	answers := mcp.InputResponseMap{key: yes()}
	forged := state[:len(state)-2] + "AA"
	refused("a forged requestState", askArgs, forged, answers, "not issued by this colibri")
	refused("other params", map[string]any{"server": "ask", "name": "ask", "arguments": map[string]any{"x": 1}}, state, answers, "other params")
	refused("no answer", askArgs, state, mcp.InputResponseMap{}, "inputResponses lacks")
	refused("the wrong kind of answer", askArgs, state, mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept"}}, "does not answer a sampling/createMessage request")
	refused("an answer to nothing asked", askArgs, state, mcp.InputResponseMap{key: yes(), "other": yes()}, `"other"`)

	res, err := askCall(t, cs, askArgs, state, answers)
	if err != nil || res.NeedsInput() || !strings.Contains(resultText(res), `"text":"yes"`) {
		t.Fatalf("the right retry: %v %+v", err, res)
	}
	// Answered: the continuation is gone, and its state starts over.
	res, err = askCall(t, cs, askArgs, state, answers)
	if err != nil || !res.NeedsInput() || res.RequestState == state {
		t.Fatalf("a state whose call has ended: want the call started over (a new round), got %v %+v", err, res)
	}
}

// A requestState of another instance (or of an earlier run of this one)
// starts the request over there: answered input_required afresh, with a
// state of its own.
func TestModernStateOfAnotherInstanceStartsOver(t *testing.T) {
	a, _ := askService(t, "a1", 0)
	b, _ := askService(t, "b2", 0)
	key, state := firstRound(t, modernClient(t, a, true))
	res, err := askCall(t, modernClient(t, b, true), askArgs, state, mcp.InputResponseMap{key: yes()})
	if err != nil || !res.NeedsInput() || !strings.HasPrefix(res.RequestState, "b2~") {
		t.Fatalf("another instance's state: want the request started over on b2, got %v %+v", err, res)
	}
}

// Eight continuations of one principal may wait for its input; a ninth
// is refused (overloaded) and its process released. A continuation whose
// caller never comes back ends with the call's timeout, and releases its
// process; its state then starts the call over.
func TestModernPendingBoundedAndExpired(t *testing.T) {
	svc, h := askService(t, "a1", 6000) // long enough for a fresh start of the fake under load: the last call is one
	cs := modernClient(t, svc, true)
	var key, state string
	for range 8 {
		key, state = firstRound(t, cs)
	}
	if n := h.Processes(); n != 8 {
		t.Fatalf("%d hosted processes for 8 pending continuations, want 8", n)
	}
	res, err := askCall(t, cs, askArgs, "", nil)
	if err != nil || errorKind(t, res) != "overloaded" || !strings.Contains(resultText(res), "8 requests of this caller already wait for its input") {
		t.Fatalf("the ninth pending continuation: %v %+v", err, res)
	}
	testwait.Eventually(t, "every process released once the continuations expire", func() bool { return h.Processes() == 0 })
	res, err = askCall(t, cs, askArgs, state, mcp.InputResponseMap{key: yes()})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("an expired state: want the call started over, got %v %+v", err, res)
	}
}

// Over HTTP a requestState is bound to its principal: bob replaying
// alice's is refused, nothing sent; alice's own retry completes.
func TestModernHTTPStateBoundToPrincipal(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice alice-token-0123456789\nbob bob-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	svc, _ := askService(t, "a1", 0)
	srv, err := httpserve.New(httpserve.Options{Addr: "127.0.0.1:0", Server: svc.NewServer("test"), TokenFile: tokens})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-served })
	client := func(token string) *mcp.ClientSession {
		tr := &mcp.StreamableClientTransport{Endpoint: srv.URL(), HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, DisableStandaloneSSE: true}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "modern", Version: "1"}, &mcp.ClientOptions{CreateMessageHandler: sampler,
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}).Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice, bob := client("alice-token-0123456789"), client("bob-token-0123456789")
	key, state := firstRound(t, alice)
	answers := mcp.InputResponseMap{key: yes()}
	_, err = askCall(t, bob, askArgs, state, answers)
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "issued to another caller") {
		t.Fatalf("bob replaying alice's requestState: %v", err)
	}
	res, err := askCall(t, alice, askArgs, state, answers)
	if err != nil || res.NeedsInput() || !strings.Contains(resultText(res), `"text":"yes"`) {
		t.Fatalf("alice's retry: %v %+v", err, res)
	}
}

// Through the stdio face with its table of large strings (internal/bulk):
// the call's large arguments and the hosted answer after a round of input
// cross whole, and every string lifted is released once the answer is
// written (the continuation holds its first request's strings until then).
func TestModernBulkThroughTheFace(t *testing.T) {
	table := bulk.New(bulkMin)
	h := host.New(host.Options{Timeout: 30 * time.Second, TerminateGrace: 200 * time.Millisecond, Bulk: table})
	reg := &registry.Registry{Path: "in-memory", Servers: map[string]*registry.Server{
		"ask": {Name: "ask", Command: fakeBin, Args: []string{"ask-caller"}}}}
	svc := tools.New(tools.Options{Registry: func() (*registry.Registry, error) { return reg, nil }, ConfigPath: "in-memory",
		Host: h, ExternalCall: true, RegistryPoll: -1, Bulk: table})
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	ss, err := svc.NewServer("test").Connect(t.Context(), &stdioserve.Transport{Reader: toServer, Writer: fromServer, Bulk: table}, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := bigText(200 << 10)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "modern", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: big}}, nil
		},
	}).Connect(t.Context(), &mcp.IOTransport{Reader: toClient, Writer: fromClient}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close(); svc.Close(); h.Close() })
	res := callTool(t, cs, tools.CallToolTool, map[string]any{"server": "ask", "name": "ask", "arguments": map[string]any{"pad": big}})
	want, _ := json.Marshal(big)
	if got := resultText(res); res.IsError || !strings.Contains(got, string(want[1:len(want)-1])) {
		t.Fatalf("the hosted answer after a round came back as %d bytes (%.200q…)", len(got), got)
	}
	if table.Lifted() == 0 {
		t.Error("nothing crossed the face by reference")
	}
	waitEmpty(t, table)
}
