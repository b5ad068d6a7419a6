package tools_test

//lint:file-ignore SA1019 the tests answer the sampling that colibri relays on purpose.

// A hostile 2026-07-28 caller against MRTR's continuations
// (docs/protocol.md#mcp-2026-07-28): racing retries of one requestState,
// a retry cancelled mid-round, a shutdown with continuations pending.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// Two retries racing with one requestState: the hosted request is answered
// once; the other retry is refused (its round is being or was answered) or,
// once the call has ended, starts the call over — never a second answer
// handed to the same hosted request.
func TestModernRacingRetriesAnswerOnce(t *testing.T) {
	svc, h := askService(t, "a1", 0)
	cs := modernClient(t, svc, true)
	key, state := firstRound(t, cs)
	answers := mcp.InputResponseMap{key: yes()}
	const n = 6
	var wg sync.WaitGroup
	results := make([]*mcp.CallToolResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { results[i], errs[i] = askCall(t, cs, askArgs, state, answers) })
	}
	wg.Wait()
	final, refused, over := 0, 0, 0
	for i := range n {
		var rpcErr *jsonrpc.Error
		switch {
		case errors.As(errs[i], &rpcErr) && rpcErr.Code == jsonrpc.CodeInvalidParams:
			refused++
		case errs[i] != nil:
			t.Errorf("retry %d: %v", i, errs[i])
		case results[i].NeedsInput():
			over++
		case strings.Contains(resultText(results[i]), `"text":"yes"`):
			final++
		default:
			t.Errorf("retry %d: %+v", i, results[i])
		}
	}
	if final != 1 || refused+over != n-1 {
		t.Fatalf("%d retries racing: %d answered, %d refused, %d started over; want exactly one answered", n, final, refused, over)
	}
	svc.Close() // the calls started over wait for input: let them go
	testwait.Eventually(t, "every process released", func() bool { return h.Processes() == 0 })
}

// A retry cancelled while the hosted request runs on after its answer:
// the hosted request is cancelled with it, its process released, and the
// requestState then starts the call over.
func TestModernRetryCancelledReleases(t *testing.T) {
	svc, h := askService(t, "a1", 60_000)
	cs := modernClient(t, svc, true)
	dir := t.TempDir()
	started, done := filepath.Join(dir, "started"), filepath.Join(dir, "done")
	args := map[string]any{"server": "ask", "name": "ask", "arguments": map[string]any{"started": started, "done": done}}
	res, err := askCall(t, cs, args, "", nil)
	if err != nil || !res.NeedsInput() {
		t.Fatalf("first round: %v %+v", err, res)
	}
	var key string
	for k := range res.InputRequests {
		key = k
	}
	ctx, cancel := context.WithCancel(t.Context())
	retried := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.CallToolTool, Arguments: args,
			RequestState: res.RequestState, InputResponses: mcp.InputResponseMap{key: yes()}})
		retried <- err
	}()
	testwait.Eventually(t, "the hosted server answered and holding", func() bool {
		_, err := os.Stat(started + ".answered")
		return err == nil
	})
	cancel()
	select {
	case err := <-retried:
		if err == nil {
			t.Fatal("the cancelled retry was answered")
		}
	case <-time.After(testwait.Bound):
		t.Fatal("the cancelled retry did not return: its hosted request runs on")
	}
	testwait.Eventually(t, "the hosted process released", func() bool { return h.Processes() == 0 })
	again, err := askCall(t, cs, args, res.RequestState, mcp.InputResponseMap{key: yes()})
	if err != nil || !again.NeedsInput() || again.RequestState == res.RequestState {
		t.Fatalf("the state of a cancelled call: want the call started over, got %v %+v", err, again)
	}
	svc.Close()
	testwait.Eventually(t, "released again", func() bool { return h.Processes() == 0 })
}

// Closing the service (colibri shutting down) with continuations pending
// cancels them: no hosted process is left waiting for a caller that will
// not come back, long before the call's timeout.
func TestModernCloseReleasesPending(t *testing.T) {
	svc, h := askService(t, "a1", 600_000)
	cs := modernClient(t, svc, true)
	for range 3 {
		firstRound(t, cs)
	}
	if n := h.Processes(); n != 3 {
		t.Fatalf("%d processes for 3 pending continuations", n)
	}
	svc.Close()
	testwait.Eventually(t, "every pending continuation's process released", func() bool { return h.Processes() == 0 })
}

// A sampling answer that the hosted server's request (which has no tools)
// cannot take — a tool_use, or several contents — is refused to the
// caller (-32602 naming why), nothing sent to the hosted server, and the
// continuation waits on for a right answer, as a 2025-11-25 caller's
// answer is held to the same by go-sdk.
func TestModernSamplingAnswerOfToolsRefused(t *testing.T) {
	svc, h := askService(t, "a1", 0)
	cs := modernClient(t, svc, true)
	key, state := firstRound(t, cs)
	for _, c := range []struct {
		what    string
		content []mcp.Content
		want    string
	}{
		{"a tool_use", []mcp.Content{&mcp.ToolUseContent{ID: "x", Name: "rm", Input: map[string]any{"path": "/"}}}, `is "tool_use" content`},
		{"two texts", []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}, "has 2 contents"},
		{"none", []mcp.Content{}, "has 0 contents"},
	} {
		answer := &mcp.CreateMessageWithToolsResult{Model: "m", Role: "assistant", Content: c.content, StopReason: "toolUse"}
		res, err := askCall(t, cs, askArgs, state, mcp.InputResponseMap{key: answer})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, c.want) {
			t.Errorf("%s answering a sampling request without tools: got %v %+v, want -32602 with %q", c.what, err, res, c.want)
		}
	}
	res, err := askCall(t, cs, askArgs, state, mcp.InputResponseMap{key: yes()})
	if err != nil || res.NeedsInput() || !strings.Contains(resultText(res), `"text":"yes"`) || strings.Contains(resultText(res), "tool_use") {
		t.Fatalf("the right answer after the refused ones: %v %+v", err, res)
	}
	testwait.Eventually(t, "the process released", func() bool { return h.Processes() == 0 })
}
