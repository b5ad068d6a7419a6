// Package upver remembers which MCP protocol version each hosted server
// speaks, so that colibri asks a server for 2026-07-28 only while it may
// speak it, and a legacy server that ignores server/discover costs one
// bounded wait (the probe) once, not one per request.
//
// The book is keyed by the registry entry as it runs (its process key: an
// edit of its command, args or env is another key) and checked against the
// server's own version: a server that reports another version than the one
// the book learned is probed again.
//
//	b := upver.New()
//	v := b.Ask(key)                 // the version to ask for; Probe when unknown
//	… connect, asking for v (bounding server/discover by ProbeTimeout when v is Modern) …
//	b.Learn(key, serverVersion, negotiated)
package upver

import "sync"

// The versions colibri asks hosted servers for.
const (
	// Modern has no initialize and no session: server/discover, then
	// every request carries its version and capabilities in _meta.
	Modern = "2026-07-28"
	// Legacy is the newest version with initialize and sessions.
	Legacy = "2025-11-25"
)

// Book is what colibri learned of each entry's protocol version. Safe for
// concurrent use; the zero Book is not: use New.
type Book struct {
	mu sync.Mutex
	m  map[string]learned
}

type learned struct {
	serverVersion string // as the server reported it (serverInfo.version)
	legacy        bool   // it did not speak Modern
}

// maxEntries bounds the book: a registry rewritten with ever new entries
// must not grow it forever. Past it, the book starts over (every entry is
// probed once more).
const maxEntries = 4096

// maxVersionBytes bounds the server version kept of each entry.
const maxVersionBytes = 256

// New returns an empty book.
func New() *Book { return &Book{m: map[string]learned{}} }

// Ask is the version to ask the entry key for: Legacy once it is known not
// to speak Modern, else Modern (the first time, a probe).
func (b *Book) Ask(key string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l, ok := b.m[key]; ok && l.legacy {
		return Legacy
	}
	return Modern
}

// Learn records what a handshake of key found: the server's version and
// the protocol version negotiated. A legacy entry whose server now reports
// another version is forgotten, so that the next start probes it again (it
// may have learned Modern).
func (b *Book) Learn(key, serverVersion, negotiated string) {
	if len(serverVersion) > maxVersionBytes {
		serverVersion = serverVersion[:maxVersionBytes] // the server's own string: bounded in the book
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	legacy := negotiated < Modern
	if old, ok := b.m[key]; ok && old.legacy && legacy && old.serverVersion != serverVersion {
		delete(b.m, key)
		return
	}
	if len(b.m) >= maxEntries {
		clear(b.m)
	}
	b.m[key] = learned{serverVersion: serverVersion, legacy: legacy}
}
