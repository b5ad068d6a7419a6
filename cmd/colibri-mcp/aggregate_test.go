package main

// Aggregate mode end to end: the built colibri-mcp with --aggregate, driven
// by go-sdk's client, the official TypeScript SDK and the MCP Inspector CLI.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var editorName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// server-everything's and the demo server's tools, offered and called as
// tools of colibri's own: the same result as through call_tool, progress
// under the caller's token.
func TestE2EAggregate(t *testing.T) {
	t.Parallel()
	s := start(t, writeRegistry(t, everything(t)), nil, "--aggregate")
	names := toolNames(t, s.cs)
	for _, want := range []string{"everything__echo", "everything__get-sum", "demo__echo", "demo__slow", "demo__add", "colibri_external_mcp_call_tool"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is not offered: %v", want, names)
		}
	}
	for _, n := range names {
		if !editorName.MatchString(n) || strings.HasPrefix(n, "broken__") {
			t.Errorf("offered: %q", n)
		}
	}

	for _, tc := range []struct {
		exposed, server, tool string
		args                  map[string]any
	}{
		{"everything__echo", "everything", "echo", map[string]any{"message": "hi"}},
		{"demo__add", "demo", "add", map[string]any{"a": 2, "b": 40}},
		{"demo__fail", "demo", "fail", map[string]any{"reason": "on purpose"}},
	} {
		direct := call(t, s.cs, tc.exposed, tc.args)
		through := call(t, s.cs, "colibri_external_mcp_call_tool", map[string]any{"server": tc.server, "name": tc.tool, "arguments": tc.args})
		db, _ := json.Marshal(direct)
		tb, _ := json.Marshal(through)
		if string(db) != string(tb) {
			t.Errorf("%s:\n%s\nthrough call_tool:\n%s", tc.exposed, db, tb)
		}
	}
	// demo__add declares an outputSchema: colibri's failure is text only.
	if res := call(t, s.cs, "demo__add", map[string]any{"a": "two"}); !res.IsError || res.StructuredContent != nil ||
		!strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "colibri: invalid_arguments: ") {
		t.Errorf("demo__add with a string: %+v, want the text colibri: invalid_arguments: …", res)
	}

	p := &mcp.CallToolParams{Name: "demo__slow", Arguments: map[string]any{"steps": 3, "interval_ms": 20}}
	p.SetProgressToken("agg-token")
	s.rec.take()
	res, err := s.cs.CallTool(t.Context(), p)
	if err != nil || res.IsError {
		t.Fatalf("demo__slow: %v %v", err, res)
	}
	want := []string{"progress agg-token 1/3 step 1 of 3", "progress agg-token 2/3 step 2 of 3", "progress agg-token 3/3 step 3 of 3", "response"}
	if got := s.rec.take(); !slices.Equal(got, want) {
		t.Errorf("on the wire = %q, want %q", got, want)
	}
}

// With the gate off the hosted tools are offered, and calling one is
// call_disabled, as call_tool is; call_tool's description says so.
func TestE2EAggregateGateOff(t *testing.T) {
	cs := connect(t, writeRegistry(t, nil), "COLIBRI_MCP_AGGREGATE=1")
	var callDesc string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "colibri_external_mcp_call_tool" {
			callDesc = tool.Description
		}
	}
	if !strings.HasPrefix(callDesc, "Calling is disabled in this session") {
		t.Errorf("call_tool's description: %s", callDesc)
	}
	msg := wantColibriError(t, call(t, cs, "demo__echo", map[string]any{"message": "hi"}), "call_disabled")
	if !strings.Contains(msg, "COLIBRI_MCP_EXTERNAL_CALL=1") || !strings.Contains(msg, "--external-call") {
		t.Errorf("message %q must name both ways to enable calls", msg)
	}
}

// An edit of the registry file reaches a connected client as
// tools/list_changed, with the new server's tools and descriptions.
func TestE2EAggregateFollowsTheRegistryFile(t *testing.T) {
	t.Parallel()
	reg := writeRegistry(t, nil)
	cmd := exec.Command(colibriBin, "serve", "--external-config", reg, "--aggregate")
	cmd.Env = append(os.Environ(), pinEnv(t), "E2E_SECRET=x")
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if names := toolNames(t, cs); slices.Contains(names, "later__echo") || !slices.Contains(names, "demo__echo") {
		t.Fatalf("before the edit: %v", names)
	}

	var doc map[string]map[string]any
	b, _ := os.ReadFile(reg)
	json.Unmarshal(b, &doc)
	doc["servers"]["later"] = map[string]any{"command": demoBin, "description": "Added while serving.", "tool_prefix": "lt"}
	delete(doc["servers"], "demo")
	b, _ = json.Marshal(doc)
	if err := os.WriteFile(reg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no tools/list_changed after the registry edit")
	}
	names := toolNames(t, cs)
	if !slices.Contains(names, "lt__echo") || slices.Contains(names, "demo__echo") {
		t.Errorf("after the edit: %v", names)
	}
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err == nil && tool.Name == "colibri_external_mcp_list_tools" && !strings.Contains(tool.Description, "- later: Added while serving.") {
			t.Errorf("list_tools' description does not name the new server: %s", tool.Description)
		}
	}
}

// Listing everything is small by default: names and first sentences.
func TestE2EListEverythingIsSmall(t *testing.T) {
	t.Parallel()
	cs := connect(t, writeRegistry(t, everything(t)))
	res := call(t, cs, "colibri_external_mcp_list_tools", nil)
	whole, _ := json.Marshal(res)
	text := res.Content[0].(*mcp.TextContent).Text
	full := call(t, cs, "colibri_external_mcp_list_tools", map[string]any{"detail": "full"})
	fullText := full.Content[0].(*mcp.TextContent).Text
	t.Logf("list everything: %d bytes of text, %d bytes of result; with detail full: %d bytes of text", len(text), len(whole), len(fullText))
	if len(text) > 4096 || len(fullText) < 3*len(text) || strings.Contains(text, "inputSchema") {
		t.Errorf("listing everything: %d bytes of text (detail full: %d):\n%s", len(text), len(fullText), text)
	}
}

// peer is a program of testdata/peers/node_modules/.bin, or a skip (a
// failure in CI) when the peers are not installed.
func peer(t *testing.T, name string) string {
	t.Helper()
	everythingPath(t)
	p, _ := filepath.Abs("../../testdata/peers/node_modules/.bin/" + name)
	if _, err := os.Stat(p); err != nil {
		msg := name + " is not installed (run `make peers`)"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: in CI this is a failure, not a skip", msg)
		}
		t.Skip("SKIPPING real-peer test: " + msg)
	}
	return p
}

// The official TypeScript SDK in aggregate mode (testdata/peers/ts-aggregate.mjs).
// The registry also holds a server with a tool whose outputSchema is not an
// object: this SDK refuses a whole tools/list for one such tool, so colibri
// must leave it out.
func TestTypeScriptClientAggregate(t *testing.T) {
	t.Parallel() // a long test of its own process: it runs beside the others (docs/testing.md)
	everythingPath(t)
	toolsFile := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(toolsFile, []byte(`{"tools":[{"name":"fine","inputSchema":{"type":"object"}},`+
		`{"name":"unportable","inputSchema":{"type":"object"},"outputSchema":{"type":"string"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	servers := everything(t)
	servers["odd"] = map[string]any{"command": fakeBin, "args": []string{"listed-tools"}, "env": map[string]any{"FAKEMCP_TOOLS_FILE": toolsFile}}
	script, _ := filepath.Abs("../../testdata/peers/ts-aggregate.mjs")
	cmd := exec.Command("node", script, colibriBin, writeRegistry(t, servers))
	cmd.Dir = filepath.Dir(script)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ts-aggregate: %v\n%s%s", err, out, stderr.String())
	}
	var summary struct {
		Echo                      string
		Sum                       float64
		Progress                  []string
		ListChanged               int
		ListEverythingTextBytes   int
		ListEverythingResultBytes int
		ToolsListBytes            int
	}
	if err := json.Unmarshal(out, &summary); err != nil {
		t.Fatalf("ts-aggregate output %q: %v", out, err)
	}
	if summary.Echo != "Echo: from typescript" || summary.Sum != 42 || len(summary.Progress) == 0 || summary.ListChanged == 0 {
		t.Errorf("ts-aggregate: %s", out)
	}
	t.Logf("TypeScript client: list everything %d bytes of text (%d of result); tools/list in aggregate mode %d bytes",
		summary.ListEverythingTextBytes, summary.ListEverythingResultBytes, summary.ToolsListBytes)
}

// The MCP Inspector's CLI finds nothing to object to in aggregate mode's
// tools (--strict: tool-schema portability), and calls one through the gate.
func TestInspectorAggregate(t *testing.T) {
	t.Parallel() // a long test of its own process: it runs beside the others (docs/testing.md)
	inspector := peer(t, "mcp-inspector")
	reg := writeRegistry(t, everything(t))
	// run returns the inspector's exit code, stdout, and stderr.
	run := func(gate bool, args ...string) (int, string, string) {
		t.Helper()
		// The inspector gives the server a minimal environment of its own:
		// -e passes the variable the demo entry's ${E2E_SECRET} needs.
		target := []string{"--cli", "-e", "E2E_SECRET=x", "-e", pinEnv(t), colibriBin, "serve", "--external-config", reg, "--aggregate"}
		if gate {
			target = append(target, "--external-call")
		}
		cmd := exec.Command(inspector, append(target, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if _, exited := err.(*exec.ExitError); err != nil && !exited {
			t.Fatalf("inspector: %v", err)
		}
		return cmd.ProcessState.ExitCode(), string(out), stderr.String()
	}

	code, out, stderr := run(false, "--method", "tools/list", "--strict")
	var listed struct{ Tools []struct{ Name string } }
	json.Unmarshal([]byte(out), &listed)
	var names []string
	for _, tl := range listed.Tools {
		names = append(names, tl.Name)
	}
	if code != 0 || !slices.Contains(names, "everything__echo") || !slices.Contains(names, "demo__slow") {
		t.Errorf("inspector tools/list --strict: exit %d, tools %v\n%s\nstderr:\n%s", code, names, out, stderr)
	}

	code, out, stderr = run(false, "--method", "tools/call", "--tool-name", "everything__echo", "--tool-arg", "message=hi")
	if code == 0 || !strings.Contains(out, `"kind": "call_disabled"`) {
		t.Errorf("inspector call with the gate off: exit %d\n%s\nstderr:\n%s", code, out, stderr)
	}
	code, out, stderr = run(true, "--method", "tools/call", "--tool-name", "everything__echo", "--tool-arg", "message=hi")
	if code != 0 || !strings.Contains(out, `"text": "Echo: hi"`) {
		t.Errorf("inspector call with the gate on: exit %d\n%s\nstderr:\n%s", code, out, stderr)
	}
}

// list-tools --json prints what the tool returns: in aggregate mode, each
// tool's exposed name too.
func TestCLIListToolsAggregate(t *testing.T) {
	t.Parallel()
	reg := writeRegistry(t, nil)
	code, stdout, stderr := runCLI(t, nil, "--external-config", reg, "--aggregate", "list-tools", "demo", "--json")
	if code != 0 || !strings.Contains(stdout, `"exposed_name": "demo__echo"`) {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, nil, "--external-config", reg, "list-tools", "demo", "--json")
	if code != 0 || strings.Contains(stdout, "exposed_name") {
		t.Errorf("without --aggregate: exit %d\n%s", code, stdout)
	}
}
