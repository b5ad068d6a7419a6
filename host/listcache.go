package host

import (
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// listCacheTTL bounds how long a listed set of tools is trusted.
const listCacheTTL = 5 * time.Minute

// listCache remembers each server's tools, so that a call need not wait for
// a tools/list round trip before it is sent (a cold Node server spends
// milliseconds producing its list). The key holds everything the list
// depends on: the registry entry, the capabilities colibri offered, and the
// serverInfo the process reported at initialize, so a changed entry, caller
// or server version never meets an old list.
//
// The cache never refuses a call by itself: a tool it does not know, or
// arguments its schema rejects, send colibri to the server for a fresh list
// before it answers unknown_tool or invalid_arguments.
//
// It is bounded by entries and by bytes (each list's encoded size, given at
// put): expired entries are freed on every get and put, and past either
// bound the oldest go first. A list larger than the whole byte bound is not
// kept at all.
type listCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]*listEntry
	bytes   int64 // the sum of the entries' sizes

	// Bounds; zero means the defaults below (tests set smaller ones).
	maxEntries int
	maxBytes   int64
	now        func() time.Time
}

type listEntry struct {
	tools   []*mcp.Tool
	size    int64
	fetched time.Time
}

// Defaults of the list cache's bounds.
const (
	maxListCacheEntries = 1024
	maxListCacheBytes   = 64 << 20
)

func listKey(srv *registry.Server, caps *mcp.ClientCapabilities, init *mcp.InitializeResult) [sha256.Size]byte {
	var info *mcp.Implementation
	version := ""
	if init != nil {
		info, version = init.ServerInfo, init.ProtocolVersion
	}
	b, _ := json.Marshal(struct {
		Name    string
		Entry   *registry.Server
		Caps    *mcp.ClientCapabilities
		Info    *mcp.Implementation
		Version string
	}{srv.Name, srv, caps, info, version})
	return sha256.Sum256(b)
}

func (c *listCache) get(key [sha256.Size]byte) []*mcp.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictExpired()
	if e, ok := c.entries[key]; ok {
		return e.tools
	}
	return nil
}

// put keeps tools under key; size is their estimated size in bytes
// (the bytes the session read while listing).
func (c *listCache) put(key [sha256.Size]byte, tools []*mcp.Tool, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[[sha256.Size]byte]*listEntry{}
	}
	c.remove(key)
	c.evictExpired()
	maxEntries, maxBytes := c.bounds()
	if size > maxBytes {
		return
	}
	for len(c.entries) > 0 && (len(c.entries) >= maxEntries || c.bytes+size > maxBytes) {
		c.evictOldest()
	}
	c.entries[key] = &listEntry{tools: tools, size: size, fetched: c.clock()}
	c.bytes += size
}

func (c *listCache) bounds() (int, int64) {
	n, b := c.maxEntries, c.maxBytes
	if n <= 0 {
		n = maxListCacheEntries
	}
	if b <= 0 {
		b = maxListCacheBytes
	}
	return n, b
}

func (c *listCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *listCache) remove(key [sha256.Size]byte) {
	if e, ok := c.entries[key]; ok {
		c.bytes -= e.size
		delete(c.entries, key)
	}
}

// evictExpired frees every entry past its TTL. A walk of at most
// maxListCacheEntries entries, under the lock.
func (c *listCache) evictExpired() {
	cutoff := c.clock().Add(-listCacheTTL)
	for k, e := range c.entries {
		if e.fetched.Before(cutoff) {
			c.remove(k)
		}
	}
}

func (c *listCache) evictOldest() {
	var oldest [sha256.Size]byte
	var at time.Time
	found := false
	for k, e := range c.entries {
		if !found || e.fetched.Before(at) {
			oldest, at, found = k, e.fetched, true
		}
	}
	if found {
		c.remove(oldest)
	}
}
