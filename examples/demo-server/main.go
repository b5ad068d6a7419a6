// Command demo-mcp-server is a small stdio MCP server for trying colibri-mcp
// and for its tests and benchmarks. Its tools:
//
//	echo {message}            returns "Echo: MESSAGE"
//	add {a, b}                returns the sum, as text and structuredContent
//	slow {steps, interval_ms} reports progress (and logs) once per step, then "done"
//	fail {reason}             returns an isError result (the tool failing, not the server)
package main

//lint:file-ignore SA1019 the demo server logs through MCP logging on purpose (deprecated, not removed, in 2026-07-28).

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Message string `json:"message" jsonschema:"the text to echo back"`
}

type addIn struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

type slowIn struct {
	Steps      int `json:"steps,omitempty" jsonschema:"how many progress steps (default 5)"`
	IntervalMS int `json:"interval_ms,omitempty" jsonschema:"milliseconds between steps (default 100)"`
}

type failIn struct {
	Reason string `json:"reason,omitempty" jsonschema:"why the tool should fail"`
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("demo-mcp-server: ")
	s := mcp.NewServer(&mcp.Implementation{Name: "demo-mcp-server", Version: "1.0.0"}, nil)

	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo a message back.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Work for a while, reporting progress once per step."},
		func(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			// At most a minute a step: a huge interval_ms would wrap around.
			steps, interval := in.Steps, time.Duration(min(in.IntervalMS, 60_000))*time.Millisecond
			if steps <= 0 {
				steps = 5
			}
			if interval <= 0 {
				interval = 100 * time.Millisecond
			}
			token := req.Params.GetProgressToken()
			for i := 1; i <= steps; i++ {
				select {
				case <-ctx.Done():
					log.Printf("slow: cancelled at step %d of %d", i, steps)
					return nil, nil, ctx.Err()
				case <-time.After(interval):
				}
				_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Logger: "slow", Data: fmt.Sprintf("debug: step %d", i)})
				_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "slow", Data: fmt.Sprintf("info: step %d", i)})
				if token != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: token, Progress: float64(i), Total: float64(steps),
						Message: fmt.Sprintf("step %d of %d", i, steps),
					})
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("done after %d steps", steps)}}}, nil, nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fail on purpose: returns an isError result."},
		func(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
			reason := in.Reason
			if reason == "" {
				reason = "failing as asked"
			}
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: reason}}}, nil, nil
		})

	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}
