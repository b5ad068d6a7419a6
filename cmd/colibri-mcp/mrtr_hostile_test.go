package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 caller answering a hosted server's elicitation with content
// its requested schema refuses (the ask-caller fake asks for a string
// "name") is refused -32602 by serve --only, nothing sent; the continuation
// waits on, and the right answer reaches the hosted server.
func TestOnlyModernElicitAnswerHeldToTheSchema(t *testing.T) {
	t.Parallel()
	entry := fakeServer("ask-caller", "")
	entry["env"] = map[string]any{"FAKEMCP_ASK_FEATURES": "1"}
	entry["pin"] = "off"
	reg := writeRegistry(t, registryDoc{"ask": entry})
	client := mcp.NewClient(&mcp.Implementation{Name: "modern", Version: "1"}, &mcp.ClientOptions{
		Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	cs := modernStdio(t, client, "serve", "--only", "ask", "--external-config", reg, "--timeout", "20s")
	first, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet"})
	if err != nil || len(first.InputRequests) != 1 || first.RequestState == "" {
		t.Fatalf("first round: %v %s", err, jsonOf(t, first))
	}
	var key string
	for k := range first.InputRequests {
		key = k
	}
	retry := func(content map[string]any) (*mcp.GetPromptResult, error) {
		return cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet", RequestState: first.RequestState,
			InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: content}}})
	}
	_, err = retry(map[string]any{"name": 5})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "requested schema") {
		t.Fatalf("content the schema refuses: %v, want -32602 naming the requested schema", err)
	}
	p, err := retry(map[string]any{"name": "alice"})
	if err != nil || len(p.Messages) != 1 || !strings.Contains(jsonOf(t, p.Messages[0]), "alice") {
		t.Fatalf("the right answer after the refused one: %v %s", err, jsonOf(t, p))
	}
}
