package host_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeEnv names the fake server the test binary plays when re-run.
const fakeEnv = "COLIBRI_FAKE_SERVER"

// fakes are servers with behaviours no real server shows on demand. Each
// speaks real MCP through go-sdk, except where breaking it is the point.
var fakes = map[string]func(){
	// A well-behaved server with tools that misbehave on request.
	"ok": func() { serveFake(nil) },
	// Reads stdin and never answers: initialize hangs.
	"hang-init": func() {
		buf := make([]byte, 4096)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				time.Sleep(time.Hour)
			}
		}
	},
	// Exits before initialize, saying why on stderr.
	"exit-early": func() {
		fmt.Fprintln(os.Stderr, "fatal: missing API key")
		os.Exit(3)
	},
	// Writes a banner on stdout before speaking MCP.
	"banner": func() {
		fmt.Println("Starting demo server v1.0 ...")
		serveFake(nil)
	},
	// Floods stderr, then serves.
	"stderr-flood": func() {
		line := strings.Repeat("x", 1000) + "\n"
		for range 10_000 { // 10 MB
			os.Stderr.WriteString(line)
		}
		fmt.Fprintln(os.Stderr, "last words before serving")
		serveFake(nil)
	},
	// Starts a grandchild that ignores SIGTERM and holds stdout, then serves.
	"grandchild": func() {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), fakeEnv+"=sleeper")
		cmd.Stdout = os.Stdout
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "grandchild pid %d\n", cmd.Process.Pid)
		serveFake(nil)
	},
	// The grandchild: ignores SIGTERM and stdin EOF, holds stdout.
	"sleeper": func() {
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
		time.Sleep(time.Hour)
	},
	// Fails to start until the file HEALTHY_MARKER exists.
	"broken-until-marker": func() {
		if _, err := os.Stat(os.Getenv("HEALTHY_MARKER")); err != nil {
			fmt.Fprintln(os.Stderr, "not ready")
			os.Exit(3)
		}
		serveFake(nil)
	},
	// Ignores stdin EOF and SIGTERM: only SIGKILL ends it.
	"stubborn": func() {
		signal.Ignore(syscall.SIGTERM)
		serveFake(func() { time.Sleep(time.Hour) })
	},
}

// serveFake serves the fake tools on stdio; afterEOF runs when the client
// closes stdin (nil: exit).
func serveFake(afterEOF func()) {
	s := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	type msg struct {
		Message string `json:"message"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in msg) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hang"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		select {} // ignores cancellation too
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "panic: crashing mid-call")
		os.Exit(2)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash-idempotent", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			if marker := os.Getenv("CRASH_ONCE_MARKER"); marker != "" {
				if _, err := os.Stat(marker); err != nil {
					os.WriteFile(marker, nil, 0o600)
					os.Exit(2)
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "survived"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil, nil
	})
	var count atomic.Int64
	mcp.AddTool(s, &mcp.Tool{Name: "count"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.FormatInt(count.Add(1), 10)}}}, nil, nil
	})
	type sleepIn struct {
		MS int `json:"ms"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "sleep"}, func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(in.MS) * time.Millisecond):
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
		case <-ctx.Done():
			fmt.Fprintln(os.Stderr, "sleep: cancelled")
			return nil, nil, ctx.Err()
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "wedge-later"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		// Answer, then stop dead: only a ping can tell.
		time.AfterFunc(50*time.Millisecond, func() { syscall.Kill(os.Getpid(), syscall.SIGSTOP) })
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wedging"}}}, nil, nil
	})
	type size struct {
		Bytes int `json:"bytes"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, in size) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("a", in.Bytes)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "flood"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		// 100 MB on one line, straight to stdout, with no regard for the
		// protocol: the host must stop reading (and kill) at its limit.
		chunk := []byte(strings.Repeat("a", 1<<20))
		os.Stdout.WriteString(`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"`)
		for range 100 {
			if _, err := os.Stdout.Write(chunk); err != nil {
				os.Exit(1)
			}
		}
		os.Exit(0)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "env"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil, nil
	})
	if marker := os.Getenv("LATE_TOOL_MARKER"); marker != "" {
		if _, err := os.Stat(marker); err == nil {
			mcp.AddTool(s, &mcp.Tool{Name: "late"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late but here"}}}, nil, nil
			})
		}
	}
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
	if afterEOF != nil {
		afterEOF()
	}
	os.Exit(0)
}
