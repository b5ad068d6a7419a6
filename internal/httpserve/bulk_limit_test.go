package httpserve

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
)

// The largest body bound there is (colibri-mcp's maxMessage saturates at
// math.MaxInt64 for a --max-result-bytes near it) reads bodies as any
// other: one past it does not wrap around.
func TestBulkLargestBodyBound(t *testing.T) {
	for _, limit := range []int64{math.MaxInt64, math.MaxInt64 - 1} {
		parts, n, err := readBody(strings.NewReader("0123456789"), -1, limit)
		if err != nil || n != 10 || string(bytes.Join(parts, nil)) != "0123456789" {
			t.Errorf("limit %d: %q, %d, %v", limit, bytes.Join(parts, nil), n, err)
		}
	}
	ts := start(t, Options{MaxBodyBytes: math.MaxInt64, Bulk: bulk.New(1 << 10)})
	cs := connect(t, ts.URL(), "")
	if got := whoami(t, cs); got == "" {
		t.Error("no answer to a call with the largest body bound")
	}
}

// A body that fails mid-way (a malformed chunk) is handed to go-sdk as
// read, and go-sdk answers it (400); nothing is lifted or left held.
func TestBulkBodyFailingMidway(t *testing.T) {
	table := bulk.New(1 << 10)
	ts := start(t, Options{Bulk: table})
	cs := connect(t, ts.URL(), "")
	conn, err := net.Dial("tcp", ts.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"whoami","arguments":{"pad":"` + strings.Repeat("p", 100<<10)
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\nzz\r\n", ts.ln.Addr(), cs.ID(), len(head), head)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want %d", resp.StatusCode, http.StatusBadRequest)
	}
	if n, held := table.Len(), table.Held(); n != 0 || held != 0 || table.Lifted() != 0 {
		t.Errorf("table: %d entries, %d bytes held, %d lifted; want none", n, held, table.Lifted())
	}
}
