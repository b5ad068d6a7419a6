package host

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/listcache"
	"github.com/colibri-mcp/colibri-mcp/internal/pool"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// KnownTools is the list srv's server gave when last listed, within the list
// cache's lifetime (5 minutes), for a per-request server and a warm one
// alike; nil when it is not known. It starts nothing: it is how a policy
// reads a tool's annotations before deciding whether anything may start
// (docs/operations.md#policy), and how labels are checked against the hosted
// lists. A list taken from a different registry entry of the same name is
// not known.
func (h *Host) KnownTools(srv *registry.Server) []*mcp.Tool {
	return h.known.get(srv, time.Now())
}

// knownLists keeps the last list of each server, by name: at most one per
// registry entry, and dropped when its entry leaves the registry (Retain).
type knownLists struct {
	mu sync.Mutex
	m  map[string]knownList
}

type knownList struct {
	srv   *registry.Server // the entry it was listed for
	fp    [sha256.Size]byte
	tools []*mcp.Tool
	plain bool // read by a session offered no capability
	at    time.Time
}

func (k *knownLists) put(srv *registry.Server, tools []*mcp.Tool, plain bool, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]knownList{}
	}
	k.m[srv.Name] = knownList{srv: srv, fp: pool.Fingerprint(srv), tools: tools, plain: plain, at: now}
}

func (k *knownLists) get(srv *registry.Server, now time.Time) []*mcp.Tool {
	tools, _ := k.getPlain(srv, now)
	return tools
}

// getPlain is get, also saying whether the list was read by a session
// offered no capability.
func (k *knownLists) getPlain(srv *registry.Server, now time.Time) ([]*mcp.Tool, bool) {
	k.mu.Lock()
	l, ok := k.m[srv.Name]
	k.mu.Unlock()
	if !ok || now.Sub(l.at) > listcache.TTL {
		return nil, false
	}
	if l.srv != srv && l.fp != pool.Fingerprint(srv) { // the same parsed entry needs no fingerprint
		return nil, false
	}
	return l.tools, l.plain
}

// forget drops server's list (its server said the list changed).
func (k *knownLists) forget(server string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, server)
}

// retain drops the lists of servers reg no longer has.
func (k *knownLists) retain(reg *registry.Registry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for name := range k.m {
		if _, ok := reg.Servers[name]; !ok {
			delete(k.m, name)
		}
	}
}

// remember keeps a list s just read from srv: in the list cache, and as
// the server's known list.
func (h *Host) remember(srv *registry.Server, s *session.Session, tools []*mcp.Tool, size int64) {
	h.lists.Put(srv.Name, sessionListKey(srv, s), tools, size)
	h.known.put(srv, tools, s.Plain(), time.Now())
}

// sessionListKey is the list cache's key for s's tools.
func sessionListKey(srv *registry.Server, s *session.Session) [sha256.Size]byte {
	return listcache.Key(srv, s.Capabilities(), s.InitializeResult())
}
