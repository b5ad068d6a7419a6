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
type listCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]listEntry
}

type listEntry struct {
	tools   []*mcp.Tool
	fetched time.Time
}

// maxListCacheEntries bounds the cache; past it, the oldest half is dropped.
const maxListCacheEntries = 1024

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
	e, ok := c.entries[key]
	if !ok || time.Since(e.fetched) > listCacheTTL {
		return nil
	}
	return e.tools
}

func (c *listCache) put(key [sha256.Size]byte, tools []*mcp.Tool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[[sha256.Size]byte]listEntry{}
	}
	if len(c.entries) >= maxListCacheEntries {
		cutoff := time.Now().Add(-listCacheTTL / 2)
		for k, e := range c.entries {
			if e.fetched.Before(cutoff) || len(c.entries) >= maxListCacheEntries {
				delete(c.entries, k)
			}
		}
	}
	c.entries[key] = listEntry{tools: tools, fetched: time.Now()}
}
