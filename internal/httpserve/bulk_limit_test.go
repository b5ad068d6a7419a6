package httpserve

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
)

// The largest body bound there is (colibri-mcp's maxMessage saturates at
// math.MaxInt64 for a --max-result-bytes near it) reads bodies as any
// other: one past it does not wrap around.
func TestBulkLargestBodyBound(t *testing.T) {
	for _, limit := range []int64{math.MaxInt64, math.MaxInt64 - 1} {
		parts, n, err := readBody(strings.NewReader("0123456789"), limit)
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
