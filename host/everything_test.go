package host_test

//lint:file-ignore SA1019 the tests drive the sampling that colibri relays on purpose.

// server-everything, the reference server, reached over HTTP in its
// streamableHttp and sse modes: what works over stdio works the same way
// through a remote upstream.

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/proc"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// everythingHTTP starts server-everything in mode ("streamableHttp" or
// "sse") on a free loopback port and returns its base URL once it listens.
// It skips (fails in CI) when the peers are not installed.
func everythingHTTP(t *testing.T, mode string) string {
	t.Helper()
	p, _ := filepath.Abs("../testdata/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	_, statErr := os.Stat(p)
	_, nodeErr := exec.LookPath("node")
	if statErr != nil || nodeErr != nil {
		msg := "server-everything is not installed (run `make peers`; needs node and npm)"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: in CI this is a failure, not a skip", msg)
		}
		t.Skip("SKIPPING real-peer test: " + msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", p, mode)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Started as the test's own child: the host's reaper (the test is it)
	// must not take it for a hosted server's orphan.
	if err := proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		proc.Reaped(cmd.Process)
	})
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), "port "+strconv.Itoa(port)) {
				once.Do(func() { close(listening) })
			}
		}
	}()
	select {
	case <-listening:
	case <-time.After(20 * time.Second):
		t.Fatalf("server-everything %s did not say it listens on port %d", mode, port)
	}
	return "http://127.0.0.1:" + strconv.Itoa(port)
}

func TestEverythingOverHTTP(t *testing.T) {
	t.Parallel()
	streamable := everythingHTTP(t, "streamableHttp")
	sse := everythingHTTP(t, "sse")
	for _, tc := range []struct {
		name, url, transport string
	}{
		{"streamable_http", streamable + "/mcp", ""},
		{"sse", sse + "/sse", registry.TransportSSE},
		// An SSE-only server refuses the initialize POST (404): auto falls
		// back to the GET stream and its endpoint event.
		{"auto_to_sse", sse + "/sse", registry.TransportAuto},
		{"auto_streamable", streamable + "/mcp", registry.TransportAuto},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// No timeout is under test: 3 MiB echoed four at a time through
			// node and -race took over 15 s of wall time on a loaded machine.
			h := newHarness(t, host.Options{Timeout: 2 * time.Minute})
			srv := &registry.Server{Name: "everything", URL: tc.url, Transport: tc.transport}

			tools, err := h.ListTools(t.Context(), srv, nil)
			if err != nil || findTool(tools, "echo") == nil {
				t.Fatalf("list: %v (%d tools)", err, len(tools))
			}

			// A big message, both ways: 3 MiB of arguments, echoed back.
			big := strings.Repeat("b", 3<<20)
			res, err := h.CallTool(t.Context(), srv, "echo", session.ArgumentsOf(map[string]any{"message": big}), nil, nil)
			if err != nil || res.Content[0].(*mcp.TextContent).Text != "Echo: "+big {
				t.Fatalf("big echo: %v", err)
			}

			// Progress, in order, under colibri's token.
			var mu sync.Mutex
			var progress []float64
			caller := &session.Caller{Progress: func(_ context.Context, p *mcp.ProgressNotificationParams) {
				mu.Lock()
				progress = append(progress, p.Progress)
				mu.Unlock()
			}}
			if _, err := h.CallTool(t.Context(), srv, "trigger-long-running-operation", session.ArgumentsOf(map[string]any{"duration": 0.3, "steps": 3}), caller, nil); err != nil {
				t.Fatalf("long-running: %v", err)
			}
			mu.Lock()
			if len(progress) != 3 || progress[0] != 1 || progress[2] != 3 {
				t.Errorf("progress %v, want [1 2 3]", progress)
			}
			mu.Unlock()

			// Sampling is forwarded to the caller and answered back.
			sampler := &session.Caller{CreateMessage: func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "sampled-answer"}}, nil
			}}
			res, err = h.CallTool(t.Context(), srv, "trigger-sampling-request", session.ArgumentsOf(map[string]any{"prompt": "hi"}), sampler, nil)
			if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "sampled-answer") {
				t.Errorf("sampling: %v %v", res, err)
			}

			// The caller's cancellation ends the call at once.
			ctx, cancel := context.WithCancel(t.Context())
			started := make(chan struct{})
			var once sync.Once
			canceller := &session.Caller{Progress: func(context.Context, *mcp.ProgressNotificationParams) { once.Do(func() { close(started) }) }}
			go func() {
				<-started
				cancel()
			}()
			start := time.Now()
			_, err = h.CallTool(ctx, srv, "trigger-long-running-operation", session.ArgumentsOf(map[string]any{"duration": 30, "steps": 300}), canceller, nil)
			wantKind(t, err, failure.KindCancelled, failure.PhaseCall)
			within(t, start, 5*time.Second)
		})
	}
}

func findTool(tools []*mcp.Tool, name string) *mcp.Tool {
	for _, t := range tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}
