package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakes: well-behaved servers, and ones whose tools or exit misbehave on request.
var fakes = map[string]func(){
	// A well-behaved server with tools that misbehave on request.
	"ok": func() { serveTools(nil) },
	// One tool, "any", answering "polite"; leaves when its stdin closes.
	"polite": servePolite,
	// Tools with annotations, for the policy: read_file (read-only, closed
	// world), search (read-only), delete_file (no hints: destructive by the
	// spec's defaults), meta (read-only, closed world; answers with the
	// request's _meta as JSON). With FAKEMCP_CALLS set to a folder, each
	// call leaves a file named by its tool there.
	"annotated": serveAnnotated,
	// Ignores stdin EOF and SIGTERM: only SIGKILL ends it.
	"stubborn": func() {
		signal.Ignore(syscall.SIGTERM)
		serveTools(func() { time.Sleep(time.Hour) })
	},
	// Waits for the file $FAKEMCP_GATE before it serves: a test decides
	// when this server answers.
	"gated": func() {
		awaitGate()
		servePolite()
	},
	// A tool whose name, description and result hold terminal escape
	// sequences (set the window title, clear the screen, CSI).
	"escapes": func() {
		s := mcp.NewServer(&mcp.Implementation{Name: "escapes", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "esc\x1b]0;t\x07", Description: "clears \x1b[2J the screen \u009b31m"},
			func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
				return text("result \x1b[31mred\x1b[0m"), nil, nil
			})
		s.Run(context.Background(), &mcp.StdioTransport{})
	},
	// Writes escape sequences on stderr, then refuses to start.
	"escapes-dying": func() {
		fmt.Fprintln(os.Stderr, "dying \x1b]0;pwned\x07 \x1b[2J")
		os.Exit(3)
	},
	// Like polite, but says goodbye on stdout after its stdin closes, a
	// moment later, as servers that log their shutdown do; then it says on
	// stderr that it could, and leaves. (A Go program writing to a closed
	// pipe on stdout dies of SIGPIPE instead.) FAKEMCP_GOODBYE_BYTES pads
	// the goodbye to about that many bytes.
	"goodbye": func() {
		servePolite()
		time.Sleep(100 * time.Millisecond)
		pad, _ := strconv.Atoi(os.Getenv("FAKEMCP_GOODBYE_BYTES"))
		os.Stdout.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"goodbye` +
			strings.Repeat(".", pad) + `"}}` + "\n")
		fmt.Fprintln(os.Stderr, "fakemcp: said goodbye")
	},
	// Like polite, but when its stdin closes it writes to stdout without
	// end, 64 KiB at a time, saying on stderr how much it wrote so far.
	"flood-at-exit": func() {
		servePolite()
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for total := 0; ; {
			os.Stdout.Write(chunk)
			total += len(chunk)
			fmt.Fprintf(os.Stderr, "fakemcp: wrote %d\n", total)
		}
	},
	// Answers calls, and stays when its stdin closes.
	"linger": func() {
		rawServe(rawHandshake(func(_ string, id json.RawMessage) {
			rawReply(id, `{"content":[{"type":"text","text":"lingering"}]}`)
		}))
	},
	// Ignores SIGTERM, SIGHUP and stdin EOF; holds whatever it inherited.
	"sleeper": func() {
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
		time.Sleep(time.Hour)
	},
}

// servePolite serves one tool, "any", answering "polite"; it leaves when
// its stdin closes.
func servePolite() {
	s := mcp.NewServer(&mcp.Implementation{Name: "polite", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "any"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return text("polite"), nil, nil
	})
	s.Run(context.Background(), &mcp.StdioTransport{})
}

func serveAnnotated() {
	s := mcp.NewServer(&mcp.Implementation{Name: "annotated", Version: "1"}, nil)
	closed := false
	add := func(name string, ann *mcp.ToolAnnotations, answer func(*mcp.CallToolRequest) string) {
		tool := &mcp.Tool{Name: name, Annotations: ann}
		if name == "delete_file" {
			// A schema of its own: a call with the wrong arguments tells
			// whether the policy judged it before its schema did.
			tool.InputSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
		}
		mcp.AddTool(s, tool, func(_ context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			if dir := os.Getenv("FAKEMCP_CALLS"); dir != "" {
				if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
					fatal(err)
				}
			}
			return text(answer(req)), nil, nil
		})
	}
	done := func(*mcp.CallToolRequest) string { return "done" }
	add("read_file", &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &closed}, done)
	add("search", &mcp.ToolAnnotations{ReadOnlyHint: true}, done)
	add("delete_file", nil, done)
	add("meta", &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &closed}, func(req *mcp.CallToolRequest) string {
		b, _ := json.Marshal(req.Params.Meta)
		return string(b)
	})
	s.Run(context.Background(), &mcp.StdioTransport{})
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// serveTools serves the fake tools on stdio; afterEOF runs when the client
// closes stdin (nil: exit).
func serveTools(afterEOF func()) {
	s := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	type msg struct {
		Message string `json:"message"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in msg) (*mcp.CallToolResult, any, error) {
		return text("Echo: " + in.Message), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "any"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return text("polite"), nil, nil
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
			return text("survived"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text(strconv.Itoa(os.Getpid())), nil, nil
	})
	var count atomic.Int64
	mcp.AddTool(s, &mcp.Tool{Name: "count"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text(strconv.FormatInt(count.Add(1), 10)), nil, nil
	})
	type sleepIn struct {
		MS      int    `json:"ms"`
		Started string `json:"started,omitempty"` // a file created once the call runs
	}
	mcp.AddTool(s, &mcp.Tool{Name: "sleep"}, func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
		if in.Started != "" {
			if err := os.WriteFile(in.Started, nil, 0o644); err != nil {
				fatal(err)
			}
		}
		select {
		case <-time.After(time.Duration(in.MS) * time.Millisecond):
			return text("slept"), nil, nil
		case <-ctx.Done():
			fmt.Fprintln(os.Stderr, "sleep: cancelled")
			return nil, nil, ctx.Err()
		}
	})
	type progressIn struct {
		Steps int `json:"steps"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
		token := req.Params.GetProgressToken()
		for i := range in.Steps {
			if token != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i + 1), Total: float64(in.Steps)})
			}
		}
		return text(fmt.Sprintf("%d steps", in.Steps)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "wedge-later"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		// Answer, then stop dead: only a ping can tell.
		time.AfterFunc(50*time.Millisecond, func() { syscall.Kill(os.Getpid(), syscall.SIGSTOP) })
		return text("wedging"), nil, nil
	})
	// mirror answers its arguments three ways: as structuredContent, as
	// text (their JSON) and, when they have a string "message", as an
	// image whose data is that string's bytes (base64 on the wire). With
	// "ms" it first waits that long, or until cancelled.
	mcp.AddTool(s, &mcp.Tool{Name: "mirror"}, func(ctx context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		if ms, ok := in["ms"].(float64); ok {
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		b, err := json.Marshal(in)
		if err != nil {
			return nil, nil, err
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: in}
		if m, ok := in["message"].(string); ok {
			res.Content = append(res.Content, &mcp.ImageContent{Data: []byte(m), MIMEType: "application/octet-stream"})
		}
		return res, nil, nil
	})
	type size struct {
		Bytes int `json:"bytes"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, in size) (*mcp.CallToolResult, any, error) {
		return text(strings.Repeat("a", in.Bytes)), nil, nil
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
	mcp.AddTool(s, &mcp.Tool{Name: "cwd"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		dir, err := os.Getwd()
		if err != nil {
			return nil, nil, err
		}
		return text(dir), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "env"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text(strings.Join(os.Environ(), "\n")), nil, nil
	})
	// Adds a tool of the given name at once: go-sdk then sends
	// notifications/tools/list_changed, as a server whose tools change does.
	type grow struct {
		Name string `json:"name"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "grow"}, func(_ context.Context, _ *mcp.CallToolRequest, in grow) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: in.Name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text("grown"), nil, nil
		})
		return text("added " + in.Name), nil, nil
	})
	if marker := os.Getenv("LATE_TOOL_MARKER"); marker != "" {
		if _, err := os.Stat(marker); err == nil {
			mcp.AddTool(s, &mcp.Tool{Name: "late"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return text("late but here"), nil, nil
			})
		}
	}
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
	if afterEOF != nil {
		afterEOF()
	}
	os.Exit(0)
}
