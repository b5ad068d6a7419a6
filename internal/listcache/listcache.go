// Package listcache remembers hosted servers' tool lists, bounded by
// entries, bytes and age, keyed by everything a list depends on.
//
//	var c listcache.Cache
//	key := listcache.Key(srv, caps, init)
//	if tools := c.Get(key); tools == nil { … list, then c.Put(srv.Name, key, tools, size) }
package listcache

import (
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// TTL bounds how long a listed set of tools is trusted.
const TTL = 5 * time.Minute

// Cache remembers each server's tools, so that a call need not wait for
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
type Cache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]*listEntry
	bytes   int64 // the sum of the entries' sizes

	// Bounds; zero means the defaults below (tests set smaller ones).
	maxEntries int
	maxBytes   int64
	now        func() time.Time
}

type listEntry struct {
	server  string // the registry entry's name ("" when put did not say)
	tools   []*mcp.Tool
	size    int64
	fetched time.Time
}

// Defaults of the list cache's bounds. maxListsPerServer bounds the lists
// kept of one registry entry: a server whose version (part of the key)
// changes at every start would otherwise fill the whole byte bound with
// lists nobody asks for again, and the decoded lists cost several times
// their counted bytes in RSS once the collector's slack is added (121 MB
// in one run).
const (
	maxListCacheEntries = 1024
	maxListCacheBytes   = 64 << 20
	maxListsPerServer   = 2
)

// Key is the cache's key for the tools srv lists to a client offered caps,
// after init.
func Key(srv *registry.Server, caps *mcp.ClientCapabilities, init *mcp.InitializeResult) [sha256.Size]byte {
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

// Get is the list kept under key, or nil.
func (c *Cache) Get(key [sha256.Size]byte) []*mcp.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictExpired()
	if e, ok := c.entries[key]; ok {
		return e.tools
	}
	return nil
}

// Put keeps tools, a list of the registry entry server, under key; size is
// their estimated size in bytes (the bytes the session read while
// listing). At most maxListsPerServer lists of one server are kept (the
// newest).
func (c *Cache) Put(server string, key [sha256.Size]byte, tools []*mcp.Tool, size int64) {
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
		c.evictOldest("")
	}
	for server != "" && c.count(server) >= maxListsPerServer {
		c.evictOldest(server)
	}
	c.entries[key] = &listEntry{server: server, tools: tools, size: size, fetched: c.clock()}
	c.bytes += size
}

func (c *Cache) bounds() (int, int64) {
	n, b := c.maxEntries, c.maxBytes
	if n <= 0 {
		n = maxListCacheEntries
	}
	if b <= 0 {
		b = maxListCacheBytes
	}
	return n, b
}

func (c *Cache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *Cache) remove(key [sha256.Size]byte) {
	if e, ok := c.entries[key]; ok {
		c.bytes -= e.size
		delete(c.entries, key)
	}
}

// evictExpired frees every entry past its TTL. A walk of at most
// maxListCacheEntries entries, under the lock.
func (c *Cache) evictExpired() {
	cutoff := c.clock().Add(-TTL)
	for k, e := range c.entries {
		if e.fetched.Before(cutoff) {
			c.remove(k)
		}
	}
}

// count is how many lists of server are kept.
func (c *Cache) count(server string) int {
	n := 0
	for _, e := range c.entries {
		if e.server == server {
			n++
		}
	}
	return n
}

// evictOldest frees the oldest entry (of server, unless it is "").
func (c *Cache) evictOldest(server string) {
	var oldest [sha256.Size]byte
	var at time.Time
	found := false
	for k, e := range c.entries {
		if server != "" && e.server != server {
			continue
		}
		if !found || e.fetched.Before(at) {
			oldest, at, found = k, e.fetched, true
		}
	}
	if found {
		c.remove(oldest)
	}
}
