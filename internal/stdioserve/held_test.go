package stdioserve

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
)

// allocated is how many bytes f allocated (the whole process: nothing else
// may run meanwhile).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A tools/call line of 8 MiB is held once, in the pieces it was read in:
// reading, lifting and decoding it allocates the line's size and little
// more, never a second copy (issue 16: colibri's memory while an 8 MiB
// message crosses stays under 4x the message because of it). A regression
// that gathers the pieces into one line, or copies a lifted string, fails
// here.
func TestLargeCallLineIsHeldOnce(t *testing.T) {
	const size = 8 << 20
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` +
		strings.Repeat("m", size) + `"}}}` + "\n")
	table := bulk.New(1024)
	var msg jsonrpc.Message
	n := allocated(func() {
		c, err := (&Transport{Reader: bytes.NewReader(line), Writer: io.Discard, Bulk: table}).Connect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if msg, err = c.Read(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
	if r, ok := msg.(*jsonrpc.Request); !ok || len(r.Params) > 1<<10 || table.Held() < size {
		t.Fatalf("the line's string was not lifted: %T, %d bytes of params, %d bytes held", msg, len(msg.(*jsonrpc.Request).Params), table.Held())
	}
	t.Logf("allocated %d bytes for a %d-byte line", n, len(line))
	if bound := uint64(size) * 5 / 4; n > bound {
		t.Errorf("reading an %d-byte call allocated %d bytes, want at most %d (one copy)", len(line), n, bound)
	}
}
