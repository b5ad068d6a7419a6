package listcache

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func cacheKey(i int) [sha256.Size]byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	return sha256.Sum256(b[:])
}

// bigList is a list of one tool whose description makes it ~n bytes.
func bigList(n int) []*mcp.Tool {
	return []*mcp.Tool{{Name: "t", Description: strings.Repeat("d", n), InputSchema: map[string]any{"type": "object"}}}
}

// A hostile sequence of large lists never takes the cache past its byte
// bound; the newest list is kept and the oldest go first. (Scaled down:
// 1.5 MB lists against 4 MB stand for 8 MB lists against 64 MiB.)
func TestListCacheBoundedByBytes(t *testing.T) {
	c := &Cache{maxBytes: 4 << 20}
	sizes := map[int]int64{}
	for i := range 20 {
		tools := bigList(3<<19 + i)
		size := int64(3<<19 + i) // what the session read while listing
		sizes[i] = size
		c.Put("", cacheKey(i), tools, size)
		if c.bytes > c.maxBytes {
			t.Fatalf("after %d puts: %d bytes kept, bound %d", i+1, c.bytes, c.maxBytes)
		}
		if c.Get(cacheKey(i)) == nil {
			t.Fatalf("put %d: the newest list is not kept", i)
		}
	}
	if len(c.entries) != 2 || c.Get(cacheKey(18)) == nil || c.Get(cacheKey(0)) != nil {
		t.Errorf("%d entries kept; want the two newest", len(c.entries))
	}
	var sum int64
	for _, e := range c.entries {
		sum += e.size
	}
	if sum != c.bytes {
		t.Errorf("accounted %d bytes, entries hold %d", c.bytes, sum)
	}
	// One list larger than the whole bound is not kept, and evicts nothing.
	c.Put("", cacheKey(99), nil, 5<<20)
	if c.Get(cacheKey(99)) != nil || len(c.entries) != 2 {
		t.Errorf("a list over the whole bound was kept (%d entries)", len(c.entries))
	}
	// Putting the same key again replaces it, with its bytes.
	c.Put("", cacheKey(19), bigList(10), 100)
	if c.bytes != sizes[18]+100 || len(c.entries) != 2 {
		t.Errorf("replacing an entry: %d bytes, %d entries", c.bytes, len(c.entries))
	}
}

// Expired entries are freed on get and on put, not only past the bound.
func TestListCacheFreesExpired(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := &Cache{now: func() time.Time { return now }}
	for i := range 10 {
		c.Put("", cacheKey(i), bigList(1000), 1000)
	}
	if c.bytes != 10_000 || len(c.entries) != 10 {
		t.Fatalf("%d bytes, %d entries", c.bytes, len(c.entries))
	}
	now = now.Add(TTL + time.Second)
	if c.Get(cacheKey(3)) != nil {
		t.Error("an expired list was returned")
	}
	if c.bytes != 0 || len(c.entries) != 0 {
		t.Errorf("after a get past the TTL: %d bytes, %d entries kept", c.bytes, len(c.entries))
	}
	for i := range 5 {
		c.Put("", cacheKey(i), bigList(1000), 1000)
	}
	now = now.Add(TTL + time.Second)
	c.Put("", cacheKey(100), bigList(10), 10)
	if c.bytes != 10 || len(c.entries) != 1 {
		t.Errorf("after a put past the TTL: %d bytes, %d entries kept", c.bytes, len(c.entries))
	}
}

// The entry bound still holds.
func TestListCacheBoundedByEntries(t *testing.T) {
	c := &Cache{maxEntries: 8}
	for i := range 100 {
		c.Put("", cacheKey(i), bigList(1), 10)
	}
	if len(c.entries) != 8 || c.bytes != 80 {
		t.Errorf("%d entries, %d bytes; want 8, 80", len(c.entries), c.bytes)
	}
}
