package stdioserve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
)

// bulkFace is a go-sdk server on a Transport with a bulk table, driven with
// raw lines. Its tools see what go-sdk hands a handler: the arguments with
// their large strings as references.
type bulkFace struct {
	t     *testing.T
	table *bulk.Table
	in    *io.PipeWriter
	out   *bufio.Reader
	held  chan struct{} // "hold" has its call
}

func newBulkFace(t *testing.T) *bulkFace {
	t.Helper()
	f := &bulkFace{t: t, table: bulk.New(1024), held: make(chan struct{}, 1)}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	f.in, f.out = inW, bufio.NewReaderSize(outR, 1<<20)
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	object := json.RawMessage(`{"type":"object"}`)
	// structured answers its arguments as structuredContent: a reference
	// there is a whole JSON string, and is lowered on the way out.
	server.AddTool(&mcp.Tool{Name: "structured", InputSchema: object}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}, StructuredContent: req.Params.Arguments}, nil
	})
	// quoted answers its arguments' JSON inside a text: a reference within
	// a longer string, which no lowering can restore.
	server.AddTool(&mcp.Tool{Name: "quoted", InputSchema: object}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	})
	// hold waits for its context to end.
	server.AddTool(&mcp.Tool{Name: "hold", InputSchema: object}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		f.held <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	tr := &Transport{Reader: inR, Writer: outW, Bulk: f.table}
	ss, err := server.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inW.Close(); outR.Close(); ss.Close() })
	f.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	f.recv()
	f.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return f
}

func (f *bulkFace) send(line string) {
	f.t.Helper()
	if _, err := io.WriteString(f.in, line+"\n"); err != nil {
		f.t.Fatalf("writing: %v", err)
	}
}

// recv reads the next line, within a deadline.
func (f *bulkFace) recv() string {
	f.t.Helper()
	got := make(chan string, 1)
	go func() {
		l, _ := f.out.ReadString('\n')
		got <- l
	}()
	select {
	case l := <-got:
		return l
	case <-time.After(10 * time.Second):
		f.t.Fatal("no line within 10s")
		return ""
	}
}

func (f *bulkFace) waitEmpty() {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.table.Len() != 0 {
		if time.Now().After(deadline) {
			f.t.Fatalf("the table still holds %d strings", f.table.Len())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func callLine(id int, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + jsonInt(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestBulkFaceLowersWhatItLifted(t *testing.T) {
	f := newBulkFace(t)
	big := strings.Repeat(`a"\\é`, 2000) // escaped as it is sent
	args := `{"big":"` + strings.ReplaceAll(strings.ReplaceAll(big, `\`, `\\`), `"`, `\"`) + `","n":1}`
	f.send(callLine(1, "structured", args))
	var resp struct {
		Result struct {
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	line := f.recv()
	if err := json.Unmarshal([]byte(line), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Result.StructuredContent["big"] != big || strings.Contains(line, "colibri-bulk-") {
		t.Fatalf("the answer does not hold the string as sent: %.200q", line)
	}
	if f.table.Lifted() != 1 {
		t.Errorf("%d strings lifted, want 1 (the handler saw a reference)", f.table.Lifted())
	}
	f.waitEmpty()
}

func TestBulkFaceNeverWritesAStrayReference(t *testing.T) {
	f := newBulkFace(t)
	f.send(callLine(1, "quoted", `{"big":"`+strings.Repeat("b", 4096)+`"}`))
	line := f.recv()
	if strings.Contains(line, "colibri-bulk-") || !strings.Contains(line, `"code":-32603`) || !strings.Contains(line, `"id":1`) {
		t.Fatalf("a reference inside a longer string was not turned into an internal error for the call: %.300q", line)
	}
	f.waitEmpty()
	// The session goes on.
	f.send(callLine(2, "structured", `{"small":"s"}`))
	if line := f.recv(); !strings.Contains(line, `"small":"s"`) {
		t.Fatalf("next call: %.200q", line)
	}
}

func TestBulkFaceOnlyLiftsToolCalls(t *testing.T) {
	f := newBulkFace(t)
	// A large ping: go-sdk reads it whole (it would answer a reference
	// as it would any string), and nothing stays in the table.
	f.send(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"arguments":{"x":"` + strings.Repeat("p", 4096) + `"}}}`)
	if line := f.recv(); !strings.Contains(line, `"result":{}`) {
		t.Fatalf("ping: %.200q", line)
	}
	if f.table.Len() != 0 {
		t.Errorf("a ping left %d strings in the table", f.table.Len())
	}
}

func TestBulkFaceReleasesCancelledAndClosedCalls(t *testing.T) {
	f := newBulkFace(t)
	f.send(callLine(1, "hold", `{"big":"`+strings.Repeat("c", 4096)+`"}`))
	<-f.held
	if f.table.Len() != 1 {
		t.Fatalf("%d strings in the table while the call runs, want 1", f.table.Len())
	}
	// Cancelled: no answer is written (MCP), the strings go all the same.
	f.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	f.waitEmpty()

	f.send(callLine(2, "hold", `{"big":"`+strings.Repeat("d", 4096)+`"}`))
	<-f.held
	if f.table.Len() != 1 {
		t.Fatalf("%d strings in the table while the call runs, want 1", f.table.Len())
	}
	// The input ends with the call in flight.
	f.in.Close()
	f.waitEmpty()
}

// A line is checked once, with its large strings lifted: it must be refused
// exactly when the whole line is not one JSON value.
func TestBulkFaceRefusesWhatIsNotJSON(t *testing.T) {
	f := newBulkFace(t)
	big := strings.Repeat("j", 4096)
	for i, line := range []string{
		callLine(1, "structured", `{"big":"`+big+`"}`) + ` {"second":"value"}`,
		callLine(2, "structured", `{"big":"`+big+"\x01"+`"}`),
		callLine(3, "structured", `{"big":"`+big+`\q"}`),
		callLine(4, "structured", `{"big":"`+big+`\u12G4"}`),
		callLine(5, "structured", `{"big" "`+big+`"}`),
	} {
		f.send(line)
		if got := f.recv(); !strings.Contains(got, `"code":-32700`) {
			t.Errorf("line %d: %.200q, want a parse error", i+1, got)
		}
	}
	// The refusal is written before decode releases the line's strings
	// (deferred): wait for it, bounded.
	f.waitEmpty()
	// A valid one still goes through.
	f.send(callLine(6, "structured", `{"big":"`+big+`"}`))
	if got := f.recv(); !strings.Contains(got, big) {
		t.Errorf("a valid call: %.200q", got)
	}
}
