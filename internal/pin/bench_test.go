package pin_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/pin"
)

func benchList(n int) []*mcp.Tool {
	l := make([]*mcp.Tool, n)
	for i := range l {
		l[i] = tool(fmt.Sprintf("tool%d", i), "Does a thing, at some length, as real descriptions do.", "a", "b", "c")
	}
	return l
}

// What a call pays when its list was judged before (the list cache, a warm
// session): one stat and a lookup.
func BenchmarkCheckJudgedList(b *testing.B) {
	s := pin.Open(filepath.Join(b.TempDir(), "pins.json"), pin.Options{})
	l := benchList(20)
	s.Check("s", pin.NoCaps, l)
	b.ResetTimer()
	for range b.N {
		if _, err := s.Check("s", pin.NoCaps, l); err != nil {
			b.Fatal(err)
		}
	}
}

// What a list read afresh (a new process's, after the cache expired)
// pays: a digest of each tool, once.
func BenchmarkCheckFreshList(b *testing.B) {
	s := pin.Open(filepath.Join(b.TempDir(), "pins.json"), pin.Options{})
	s.Check("s", pin.NoCaps, benchList(20))
	b.ResetTimer()
	for range b.N {
		if _, err := s.Check("s", pin.NoCaps, benchList(20)); err != nil {
			b.Fatal(err)
		}
	}
}
