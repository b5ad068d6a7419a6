package main

//lint:file-ignore SA1019 the tests drive the sampling, roots and logging that colibri relays on purpose.

// Protocol fidelity through colibri: progress, cancellation, logging and
// server-to-client requests, with the demo server and server-everything.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// colibriRun is a client of a running colibri-mcp, with what it saw on the wire.
type colibriRun struct {
	cs     *mcp.ClientSession
	rec    *wireLog
	stderr *lockedWriter
	pid    int
}

// wireLog records, in read order, progress and log notifications and
// responses, as "progress TOKEN P/T MSG", "log LOGGER LEVEL DATA", "response".
type wireLog struct {
	mcp.Transport
	mu  sync.Mutex
	log []string
}

func (w *wireLog) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.Transport.Connect(ctx)
	return &wireConn{Connection: c, w: w}, err
}

func (w *wireLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.log
	w.log = nil
	return out
}

func (w *wireLog) count(prefix string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, l := range w.log {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

type wireConn struct {
	mcp.Connection
	w *wireLog
}

func (c *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Request:
		switch m.Method {
		case "notifications/progress":
			var p mcp.ProgressNotificationParams
			json.Unmarshal(m.Params, &p)
			c.w.log = append(c.w.log, fmt.Sprintf("progress %v %v/%v %s", p.ProgressToken, p.Progress, p.Total, p.Message))
		case "notifications/message":
			var p mcp.LoggingMessageParams
			json.Unmarshal(m.Params, &p)
			c.w.log = append(c.w.log, fmt.Sprintf("log %s %s %v", p.Logger, p.Level, p.Data))
		}
	case *jsonrpc.Response:
		c.w.log = append(c.w.log, "response")
	}
	return msg, err
}

// start runs colibri-mcp serve on registry and connects a client with opts.
func start(t *testing.T, registry string, opts *mcp.ClientOptions, extraArgs ...string) *colibriRun {
	t.Helper()
	args := append([]string{"serve", "--external-config", registry, "--external-call", "--log-level", "debug"}, extraArgs...)
	cmd := exec.Command(colibriBin, args...)
	cmd.Env = append(os.Environ(), pinEnv(t), "E2E_SECRET=x")
	s := &colibriRun{stderr: &lockedWriter{w: &strings.Builder{}}}
	cmd.Stderr = s.stderr
	s.rec = &wireLog{Transport: &mcp.CommandTransport{Command: cmd}}
	client := mcp.NewClient(&mcp.Implementation{Name: "protocol", Version: "1"}, opts)
	cs, err := client.Connect(t.Context(), s.rec, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	s.cs, s.pid = cs, cmd.Process.Pid
	s.rec.take()
	return s
}

func (s *colibriRun) logs() string { return s.stderr.String() }

func hostedCall(server, tool string, args map[string]any) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
		Arguments: map[string]any{"server": server, "name": tool, "arguments": args}}
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// server-everything's long-running operation: exactly five progress
// notifications at the caller, under the caller's (numeric) token, in order,
// all before the result.
func TestProtocolEverythingProgress(t *testing.T) {
	t.Parallel()
	s := start(t, writeRegistry(t, everything(t)), nil)
	p := hostedCall("everything", "trigger-long-running-operation", map[string]any{"duration": 1, "steps": 5})
	p.SetProgressToken(42)
	res, err := s.cs.CallTool(t.Context(), p)
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	var want []string
	for i := 1; i <= 5; i++ {
		want = append(want, fmt.Sprintf("progress 42 %d/5 ", i))
	}
	want = append(want, "response")
	got := s.rec.take()
	trimmed := make([]string, len(got))
	for i, g := range got {
		// server-everything's messages vary; compare token, progress, total.
		if strings.HasPrefix(g, "progress ") {
			f := strings.SplitN(g, " ", 4)
			g = strings.Join(f[:3], " ") + " "
		}
		trimmed[i] = g
	}
	if !slices.Equal(trimmed, want) {
		t.Errorf("on the wire:\n%q\nwant\n%q", got, want)
	}
}

// The caller's cancellation reaches the hosted server as
// notifications/cancelled, nothing is answered for the cancelled request,
// and the hosted process is gone within the teardown bound.
func TestProtocolCancel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		server, tool string
		args         map[string]any
		sawCancel    string // what the hosted server says on stderr when it sees the cancellation
	}{
		{"demo", "slow", map[string]any{"steps": 100, "interval_ms": 50}, "slow: cancelled at step"},
		{"everything", "trigger-long-running-operation", map[string]any{"duration": 20, "steps": 20}, ""},
	} {
		t.Run(tc.server, func(t *testing.T) {
			var extra registryDoc
			if tc.server == "everything" {
				extra = everything(t)
			}
			s := start(t, writeRegistry(t, extra), nil)
			ctx, cancel := context.WithCancel(t.Context())
			p := hostedCall(tc.server, tc.tool, tc.args)
			p.SetProgressToken("cancel-me")
			errc := make(chan error, 1)
			go func() {
				_, err := s.cs.CallTool(ctx, p)
				errc <- err
			}()
			for deadline := time.Now().Add(10 * time.Second); s.rec.count("progress") < 2; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("no progress arrived")
				}
			}
			hosted := proctable.Children(s.pid)
			s.rec.take()
			cancel()
			if err := <-errc; err == nil {
				t.Fatal("the cancelled call returned a result")
			}
			if tc.sawCancel != "" {
				for deadline := time.Now().Add(5 * time.Second); !strings.Contains(s.logs(), tc.sawCancel); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("the hosted server never saw notifications/cancelled; colibri's log:\n%s", s.logs())
					}
				}
			}
			for _, pid := range hosted {
				for deadline := time.Now().Add(6 * time.Second); proctable.Alive(pid); time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("hosted process %d alive after the cancelled call's teardown bound", pid)
					}
				}
			}
			// The wire is ordered: once a ping's response is read, an answer
			// to the cancelled request, written before it, would have been.
			if err := s.cs.Ping(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			got := s.rec.take()
			if n := len(slices.DeleteFunc(slices.Clone(got), func(l string) bool { return l != "response" })); n != 1 {
				t.Errorf("on the wire after the cancellation: %q, want one response (the ping's): colibri answered the cancelled request", got)
			}
		})
	}
}

// The hosted server's log messages reach the caller as server/NAME, at the
// level the caller set, before the result.
func TestProtocolLogging(t *testing.T) {
	t.Parallel()
	t.Run("demo, level info", func(t *testing.T) {
		s := start(t, writeRegistry(t, nil), nil)
		if err := s.cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		s.rec.take()
		res, err := s.cs.CallTool(t.Context(), hostedCall("demo", "slow", map[string]any{"steps": 2, "interval_ms": 10}))
		if err != nil || res.IsError {
			t.Fatalf("%v %v", err, res)
		}
		want := []string{"log server/demo info info: step 1", "log server/demo info info: step 2", "response"}
		if got := s.rec.take(); !slices.Equal(got, want) {
			t.Errorf("on the wire:\n%q\nwant\n%q", got, want)
		}
	})
	t.Run("everything, toggle-simulated-logging", func(t *testing.T) {
		s := start(t, writeRegistry(t, everything(t)), nil)
		if err := s.cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
		s.rec.take()
		res, err := s.cs.CallTool(t.Context(), hostedCall("everything", "toggle-simulated-logging", nil))
		if err != nil || res.IsError {
			t.Fatalf("%v %v", err, res)
		}
		got := s.rec.take()
		if len(got) < 2 || !strings.HasPrefix(got[0], "log server/everything ") || got[len(got)-1] != "response" {
			t.Errorf("on the wire: %q, want a server/everything log message, then the response", got)
		}
	})
	t.Run("no level set: nothing", func(t *testing.T) {
		s := start(t, writeRegistry(t, nil), nil)
		res, err := s.cs.CallTool(t.Context(), hostedCall("demo", "slow", map[string]any{"steps": 2, "interval_ms": 10}))
		if err != nil || res.IsError || !strings.Contains(textOf(res), "done after 2 steps") {
			t.Fatalf("the call failed: %v %v", err, res)
		}
		if got := s.rec.take(); !slices.Equal(got, []string{"response"}) {
			t.Errorf("on the wire: %q, want only the response", got)
		}
	})
}

// Progress restarts the call timeout; ten times call_timeout_ms still cuts.
func TestProtocolProgressExtendsTimeout(t *testing.T) {
	t.Parallel() // 6 s of waiting on timers
	reg := writeRegistry(t, registryDoc{
		"patient": {"command": demoBin, "call_timeout_ms": 1000},
		"capped":  {"command": demoBin, "call_timeout_ms": 300},
	})
	s := start(t, reg, nil)
	// 2 s in all, twice the timeout; a step every 250 ms leaves 750 ms of
	// slack between two signs of life.
	p := hostedCall("patient", "slow", map[string]any{"steps": 8, "interval_ms": 250})
	p.SetProgressToken("t")
	res, err := s.cs.CallTool(t.Context(), p)
	if err != nil || res.IsError || !strings.Contains(textOf(res), "done after 8 steps") {
		t.Fatalf("a call that keeps reporting progress was cut: %v %v", err, res)
	}

	// A step every 50 ms: six times within the 300 ms timeout, so that a
	// loaded machine's scheduling cannot make a gap look like silence.
	p = hostedCall("capped", "slow", map[string]any{"steps": 400, "interval_ms": 50}) // 20 s > 10 × 300 ms
	p.SetProgressToken("t")
	start := time.Now()
	res, err = s.cs.CallTool(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	msg := wantColibriError(t, res, "timeout")
	if d := time.Since(start); d < 3*time.Second || d > 10*time.Second {
		t.Errorf("cut after %s, want at the 3 s ceiling (the call would run 20 s)", d)
	}
	if !strings.Contains(msg, "ten times") {
		t.Errorf("message %q should say the ceiling cut it", msg)
	}
}

// Sampling, elicitation and roots requests of the hosted server are
// forwarded to a caller that advertised them, during its call, and answered
// back; a caller without them never has them offered to the hosted server,
// and listing offers them to no one (server-everything then lists neither
// tool, but a capable caller can still call them).
func TestProtocolServerToClientRequests(t *testing.T) {
	t.Parallel() // a long test of its own process: it runs beside the others (docs/testing.md)
	// Not pinned: the capable caller calls tools that listing (offering
	// nothing) never showed, which pins would count as new since the
	// server was pinned (docs/security.md).
	e := everything(t)
	e["everything"]["pin"] = "off"
	reg := writeRegistry(t, e)
	listed := func(s *colibriRun) []string {
		res := call(t, s.cs, "colibri_external_mcp_list_tools", map[string]any{"server": "everything"})
		var out struct {
			Servers []struct{ Tools []struct{ Name string } }
		}
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out)
		var names []string
		for _, tool := range out.Servers[0].Tools {
			names = append(names, tool.Name)
		}
		return names
	}

	bare := start(t, reg, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	for _, name := range []string{"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"} {
		if slices.Contains(listed(bare), name) {
			t.Errorf("%s offered although the caller lacks its capability", name)
		}
	}

	client := &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant",
				Content: &mcp.TextContent{Text: "sampled by the caller"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	}
	full := start(t, reg, client)
	names := listed(full)
	for _, name := range []string{"trigger-sampling-request", "trigger-elicitation-request"} {
		if slices.Contains(names, name) {
			t.Errorf("%s listed: listing must offer the hosted server no capability: %v", name, names)
		}
	}
	res, err := bare.cs.CallTool(t.Context(), hostedCall("everything", "trigger-sampling-request", map[string]any{"prompt": "hello"}))
	if err != nil || wantColibriError(t, res, "unknown_tool") == "" {
		t.Errorf("a caller without sampling called the sampling tool: %v %v", err, res)
	}
	res, err = full.cs.CallTool(t.Context(), hostedCall("everything", "trigger-sampling-request", map[string]any{"prompt": "hello"}))
	if err != nil || res.IsError || !strings.Contains(textOf(res), "sampled by the caller") {
		t.Errorf("sampling: %v %s", err, textOf(res))
	}
	res, err = full.cs.CallTool(t.Context(), hostedCall("everything", "trigger-elicitation-request", nil))
	if err != nil || res.IsError || !strings.Contains(textOf(res), "declined") {
		t.Errorf("elicitation: %v %s", err, textOf(res))
	}
}

func TestProtocolRoots(t *testing.T) {
	t.Parallel()
	reg := writeRegistry(t, everything(t))
	cmd := exec.Command(colibriBin, "serve", "--external-config", reg, "--external-call")
	cmd.Env = append(os.Environ(), pinEnv(t), "E2E_SECRET=x")
	client := mcp.NewClient(&mcp.Implementation{Name: "roots", Version: "1"}, nil)
	client.AddRoots(&mcp.Root{URI: "file:///work/project-alpha", Name: "alpha"})
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), hostedCall("everything", "get-roots-list", nil))
	if err != nil || res.IsError || !strings.Contains(textOf(res), "file:///work/project-alpha") {
		t.Errorf("roots: %v %s", err, textOf(res))
	}
}
