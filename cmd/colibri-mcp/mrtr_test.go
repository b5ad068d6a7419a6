package main

//lint:file-ignore SA1019 the tests answer the sampling and roots that colibri relays on purpose.

// A go-sdk 2026-07-28 client, offering sampling, elicitation and roots,
// answers server-everything's tools that ask for them through colibri: it
// has no session to be asked on, so colibri asks it by input_required
// results and its retries (MRTR, docs/protocol.md#mcp-2026-07-28), over
// stdio and HTTP, through colibri_external_mcp_call_tool and serve --only.

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernAsker is a 2026-07-28 client answering what server-everything asks,
// counting the rounds it was asked in.
func modernAsker(asked *int) *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "modern-asker", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			*asked++
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled by the caller"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			*asked++
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///work/project-alpha", Name: "alpha"})
	return c
}

// askEverything calls server-everything's three asking tools through call
// (the tool's name, its arguments) and checks each answer came from the
// caller.
func askEverything(t *testing.T, call func(name string, args map[string]any) (*mcp.CallToolResult, error)) {
	t.Helper()
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"trigger-sampling-request", map[string]any{"prompt": "hello"}, "sampled by the caller"},
		{"trigger-elicitation-request", nil, "declined"},
		{"get-roots-list", nil, "file:///work/project-alpha"},
	} {
		res, err := call(c.tool, c.args)
		if err != nil || res.IsError || !strings.Contains(textOf(res), c.want) {
			t.Errorf("%s: want %q from the caller, got %v %v", c.tool, c.want, err, res)
			if res != nil {
				t.Logf("%s", textOf(res))
			}
		}
	}
}

func modernStdio(t *testing.T, client *mcp.Client, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(colibriBin, args...)
	cmd.Env = append(os.Environ(), pinEnv(t), "E2E_SECRET=x")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Through colibri_external_mcp_call_tool over stdio.
func TestModernCallerAskedThroughCallTool(t *testing.T) {
	t.Parallel()
	e := everything(t)
	e["everything"]["pin"] = "off" // the tools that ask appear only to a client offering what they ask for
	var asked int
	cs := modernStdio(t, modernAsker(&asked), "serve", "--external-config", writeRegistry(t, e), "--external-call", "--timeout", "20s")
	askEverything(t, func(name string, args map[string]any) (*mcp.CallToolResult, error) {
		return cs.CallTool(t.Context(), hostedCall("everything", name, args))
	})
	if asked < 2 {
		t.Errorf("the caller was asked %d times, want sampling and elicitation", asked)
	}
}

// Through serve --only, over stdio and over HTTP (a stateless caller).
func TestOnlyModernCallerAsked(t *testing.T) {
	t.Parallel()
	e := everything(t)
	e["everything"]["pin"] = "off"
	reg := writeRegistry(t, e)
	t.Run("stdio", func(t *testing.T) {
		var asked int
		cs := modernStdio(t, modernAsker(&asked), "serve", "--only", "everything", "--external-config", reg, "--external-call", "--timeout", "20s")
		askEverything(t, func(name string, args map[string]any) (*mcp.CallToolResult, error) {
			return cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		})
	})
	t.Run("http", func(t *testing.T) {
		c := startHTTPWith(t, "127.0.0.1:0", reg, "--only", "everything", "--timeout", "20s")
		var asked int
		cs, err := modernAsker(&asked).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: c.url, DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		askEverything(t, func(name string, args map[string]any) (*mcp.CallToolResult, error) {
			return cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		})
	})
}

// A hosted answer with strings large enough for colibri to move by
// reference (internal/bulk), given after a round of input, reaches the
// caller whole: the continuation keeps its first request's strings (and
// the answer's, lifted for that request) until the answer is written.
func TestModernLargeAnswerAfterARound(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("y", 200<<10)
	client := mcp.NewClient(&mcp.Implementation{Name: "modern-big", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: big}}, nil
		},
	})
	reg := writeRegistry(t, registryDoc{"ask": fakeServer("ask-caller", "")})
	cs := modernStdio(t, client, "serve", "--external-config", reg, "--external-call", "--timeout", "20s")
	res, err := cs.CallTool(t.Context(), hostedCall("ask", "ask", map[string]any{"pad": strings.Repeat("x", 100<<10)}))
	if err != nil || res.IsError || !strings.Contains(textOf(res), big) {
		t.Fatalf("the large answer after a round: %v %.300v", err, res)
	}
}

// serve --only asks a 2026-07-28 caller during prompts/get (an
// elicitation) and resources/read (its roots) as during a call.
func TestOnlyModernPromptAndResourceAsk(t *testing.T) {
	t.Parallel()
	entry := fakeServer("ask-caller", "")
	entry["env"] = map[string]any{"FAKEMCP_ASK_FEATURES": "1"}
	entry["pin"] = "off"
	reg := writeRegistry(t, registryDoc{"ask": entry})
	client := mcp.NewClient(&mcp.Implementation{Name: "modern", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "alice"}}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///work/project-beta", Name: "beta"})
	cs := modernStdio(t, client, "serve", "--only", "ask", "--external-config", reg, "--timeout", "20s")
	p, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet"})
	if err != nil || len(p.Messages) != 1 || !strings.Contains(jsonOf(t, p.Messages[0]), "alice") {
		t.Errorf("prompts/get answered by the caller's elicitation: %v %s", err, jsonOf(t, p))
	}
	r, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ask://roots"})
	if err != nil || len(r.Contents) != 1 || !strings.Contains(r.Contents[0].Text, "file:///work/project-beta") {
		t.Errorf("resources/read answered by the caller's roots: %v %s", err, jsonOf(t, r))
	}
}
