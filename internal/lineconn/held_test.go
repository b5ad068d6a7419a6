package lineconn

import (
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
)

// An 8 MiB result line of a call colibri awaits for a request (bulk.Owner) is held
// once, in the pieces it was read in: reading, lifting and decoding it
// allocates the line's size and little more, never a second copy (issue
// 16's memory target rests on it). A regression that gathers the pieces,
// or copies the lifted text, fails here.
func TestLargeResultLineIsHeldOnce(t *testing.T) {
	const size = 8 << 20
	line := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` +
		strings.Repeat("r", size) + `"}]}}` + "\n")
	table := bulk.New(1024)
	ctx := requestCtx(table, t.Context()) // ends with the test
	server, reply := io.Pipe()            // the line is sent once allocations are counted
	c, err := (&Transport{Reader: server, Writer: nopWriteCloser{io.Discard}, Bulk: table}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	id, _ := jsonrpc.MakeID(float64(1))
	if err := c.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{"name":"echo"}`)}); err != nil {
		t.Fatal(err)
	}
	var msg jsonrpc.Message
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	go reply.Write(line)
	msg, err = c.Read(t.Context())
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	n := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d bytes for a %d-byte line", n, len(line))
	if r, ok := msg.(*jsonrpc.Response); !ok || len(r.Result) > 1<<10 || table.Held() < size {
		t.Fatalf("the result's text was not lifted: %T, %d bytes held", msg, table.Held())
	}
	if bound := uint64(size) * 5 / 4; n > bound {
		t.Errorf("reading an %d-byte result allocated %d bytes, want at most %d (one copy)", len(line), n, bound)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
