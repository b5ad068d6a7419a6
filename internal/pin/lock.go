package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The pin file as a lock (docs/security.md, locked pins): a file of kind
// "lock", written by `colibri-mcp pins export` on a staging machine,
// reviewed, committed and shipped; or any pin file under the registry's
// "pin": "locked". Either is only ever read: nothing is recorded, no lock
// file is made beside it, and a definition it does not hold is not
// trusted.

// LockKind is the "kind" of a pin file that is a lock.
const LockKind = "lock"

// Lock is a pin file of kind "lock": for each server one set of accepted
// definitions, the union of the capability sets pinned. Its members are
// declared in key order: encoded, it is canonical.
type Lock struct {
	Kind    string                 `json:"kind"`
	Servers map[string]*LockServer `json:"servers"`
	Version int                    `json:"version"`
}

// LockServer is one server's definitions in a lock, by kind and then by
// key (a tool's or prompt's name, a template's uriTemplate, a resource's
// uri, InstructionsName), and the fingerprint of the registry entry they
// were pinned with.
type LockServer struct {
	Instructions  map[string][]*LockDef `json:"instructions,omitempty"`
	Prompts       map[string][]*LockDef `json:"prompts,omitempty"`
	RegistryEntry *Fingerprint          `json:"registry_entry,omitempty"`
	Resources     map[string][]*LockDef `json:"resources,omitempty"`
	Templates     map[string][]*LockDef `json:"templates,omitempty"`
	Tools         map[string][]*LockDef `json:"tools"`
}

// LockDef is one accepted definition in a lock: most names have one; a
// server that describes a tool differently to a caller that offers a
// capability has one per description.
type LockDef struct {
	// Capabilities are the client capabilities a session must offer for
	// this definition to be trusted (sorted; empty: any session), those
	// common to every capability set it was pinned in.
	Capabilities []string        `json:"capabilities"`
	Definition   json.RawMessage `json:"definition"`
	Digest       string          `json:"digest"`
	Flags        *Flags          `json:"flags,omitempty"`
	// Reviewed: a person accepted it (`pins accept`), rather than it
	// being trusted at its first sighting.
	Reviewed bool `json:"reviewed,omitempty"`
}

// of is where ls keeps kind k.
func (ls *LockServer) of(k Kind) *map[string][]*LockDef {
	switch k {
	case KindPrompt:
		return &ls.Prompts
	case KindTemplate:
		return &ls.Templates
	case KindResource:
		return &ls.Resources
	case KindInstructions:
		return &ls.Instructions
	}
	return &ls.Tools
}

// Fingerprint is a registry entry's, as the registry computes it: the
// SHA-256 of the entry's canonical JSON (the members that say what runs,
// secrets left out) and one of each member, so that a change can be named
// (docs/security.md, locked pins).
type Fingerprint struct {
	Digest string            `json:"digest"`
	Fields map[string]string `json:"fields,omitempty"`
	// Source is the release the entry names, NAME@VERSION of its
	// "source" (add --from-registry), which pins and pins diff show so
	// that a publisher's release is never taken for a change under one;
	// the digest already holds it.
	Source string `json:"source,omitempty"`
}

// changed are the members in which f and g differ, in order.
func (f *Fingerprint) changed(g *Fingerprint) []string {
	if f == nil || g == nil || f.Digest == g.Digest {
		return nil
	}
	seen := map[string]bool{}
	for k := range f.Fields {
		seen[k] = true
	}
	for k := range g.Fields {
		seen[k] = true
	}
	var out []string
	for _, k := range sortedKeys(seen) {
		if f.Fields[k] != g.Fields[k] {
			out = append(out, k)
		}
	}
	return out
}

// LockedError is `pins accept` or `pins reset` against a lock: it is
// renewed where the servers are pinned, never changed in place.
type LockedError struct {
	Path string
	Kind bool // the file is of kind lock (else the registry says "pin": "locked")
}

func (e *LockedError) Error() string {
	why := `the registry says "pin": "locked"`
	if e.Kind {
		why = `it is of kind "lock"`
	}
	return fmt.Sprintf("pin file %s is a lock (%s): colibri only ever reads it. Renew it where the servers are pinned (a staging machine with a pin file of its own): "+
		"colibri-mcp check --probe, colibri-mcp pins diff SERVER, colibri-mcp pins accept SERVER, then colibri-mcp pins export --output pins.lock, review, commit and ship it to %s", e.Path, why, e.Path)
}

// parseLock decodes and checks a lock's content.
func parseLock(data []byte) (*Lock, error) {
	var l Lock
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("is not a lock colibri-mcp can read (%v): export it again (colibri-mcp pins export --output FILE)", err)
	}
	if l.Servers == nil {
		l.Servers = map[string]*LockServer{}
	}
	for server, ls := range l.Servers {
		if ls == nil {
			delete(l.Servers, server)
			continue
		}
		for _, k := range Kinds {
			for name, defs := range *ls.of(k) {
				for _, d := range defs {
					if d == nil || len(d.Digest) != len("sha256:")+64 || d.Digest[:7] != "sha256:" {
						return nil, fmt.Errorf("server %q, %s %q: a digest that is not sha256:<64 hex digits>", server, k, name)
					}
					if Digest(recanonical(d.Definition)) != d.Digest {
						return nil, fmt.Errorf("server %q, %s %q: the definition does not have its digest %s (edited by hand? export it again)", server, k, name, d.Digest)
					}
				}
			}
		}
	}
	return &l, nil
}

// readable is a canonical definition as a lock shows it: the same JSON
// with <, > and & as they are (json.Marshal writes \u003c), so that a
// description's "<IMPORTANT>" reads as it is in review.
func readable(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return raw
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// recanonical is a definition read from a lock in its canonical form
// again (json.Marshal of the decoded value: keys sorted, HTML escaped),
// the bytes its digest is of.
func recanonical(raw json.RawMessage) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

// capsNames are a capability set's names (none for NoCaps).
func capsNames(caps string) []string {
	if caps == NoCaps || caps == "" {
		return []string{}
	}
	return strings.Split(caps, ",")
}

// exportOf is f as a lock: for each server (of only, when given), the
// accepted definitions of every capability set, one per digest, each
// needing the capabilities common to the sets it was pinned in; pending
// changes left out.
func exportOf(f *File, only []string) *Lock {
	l := &Lock{Kind: LockKind, Version: Version, Servers: map[string]*LockServer{}}
	for server, sets := range f.Servers {
		if len(only) > 0 && !slices.Contains(only, server) {
			continue
		}
		ls := &LockServer{Tools: map[string][]*LockDef{}}
		for _, caps := range sortedKeys(sets) {
			set := sets[caps]
			if ls.RegistryEntry == nil || caps == NoCaps {
				if set.Entry != nil {
					ls.RegistryEntry = set.Entry
				}
			}
			for _, k := range Kinds {
				pinned, _ := set.pins(k)
				if len(pinned) == 0 {
					continue
				}
				m := ls.of(k)
				if *m == nil {
					*m = map[string][]*LockDef{}
				}
				for _, name := range sortedKeys(pinned) {
					e := pinned[name]
					defs := (*m)[name]
					i := slices.IndexFunc(defs, func(d *LockDef) bool { return d.Digest == e.Digest })
					if i < 0 {
						(*m)[name] = append(defs, &LockDef{Capabilities: capsNames(caps), Definition: readable(e.Definition), Digest: e.Digest, Reviewed: e.Reviewed, Flags: e.Flags})
						continue
					}
					d := defs[i]
					d.Capabilities = slices.DeleteFunc(d.Capabilities, func(c string) bool { return !slices.Contains(capsNames(caps), c) })
					d.Reviewed = d.Reviewed || e.Reviewed
				}
			}
		}
		for _, k := range Kinds {
			for _, defs := range *ls.of(k) {
				slices.SortFunc(defs, func(a, b *LockDef) int { return strings.Compare(a.Digest, b.Digest) })
			}
		}
		l.Servers[server] = ls
	}
	return l
}

// encodeLock is l's canonical bytes: keys sorted, two-space indent, no
// HTML escaping (a description's "<IMPORTANT>" reads as it is), one
// final newline. The same lock always gives the same bytes.
func encodeLock(l *Lock) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
		return nil, fmt.Errorf("encoding the lock: %w", err)
	}
	return b.Bytes(), nil
}

// Export is the pins (of the servers named, or of every one) as a lock's
// canonical bytes (`colibri-mcp pins export`). A server the pin file does
// not hold is a *NotFoundError. A lock exports the servers it holds.
func (s *Store) Export(servers ...string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	var l *Lock
	if s.file.lock != nil {
		l = &Lock{Kind: LockKind, Version: Version, Servers: map[string]*LockServer{}}
		for name, ls := range s.file.lock.Servers {
			if len(servers) == 0 || slices.Contains(servers, name) {
				l.Servers[name] = ls
			}
		}
	} else {
		l = exportOf(s.file, servers)
	}
	for _, name := range servers {
		if l.Servers[name] == nil {
			return nil, notFound("server", "", name, s.serverNames())
		}
	}
	return encodeLock(l)
}

// serverNames are the servers the pins hold, in order.
func (s *Store) serverNames() []string {
	if s.file.lock != nil {
		return sortedKeys(s.file.lock.Servers)
	}
	return sortedKeys(s.file.Servers)
}

// lockView is the lock the pins are judged against under a lock: the
// file's own when it is one, else the pin file's accepted definitions as
// export would write them (made once per version read).
func (s *Store) lockView() *Lock {
	if s.file.lock != nil {
		return s.file.lock
	}
	if s.view == nil || s.viewGen != s.gen {
		s.view, s.viewGen = exportOf(s.file, nil), s.gen
	}
	return s.view
}

// observed is one definition a list showed under a lock that the lock
// does not trust: what `pins diff` shows, kept in memory only.
type observed struct {
	caps   string
	digest string
	def    json.RawMessage
	what   []string
	base   json.RawMessage // the lock's definition it is compared with; nil: none
	flags  []Flag          // what the poisoning scan found in def
}

// maxObserved bounds the definitions kept per server, capability set and
// kind: a server's list is bounded already; this bounds what a server
// that lists new names at every read leaves behind.
const maxObserved = 4096

// judgeLocked compares b, listed by server for a session offered caps,
// with the lock, writing nothing: a definition the lock holds for a
// session offering caps, with this digest, is trusted; any other is
// changed ("new" when the lock holds no such name it could trust), and
// kept in memory for `pins diff`.
func (s *Store) judgeLocked(server, caps string, b batch) Verdict {
	v := Verdict{Locked: true}
	l := s.lockView()
	var defs map[string][]*LockDef
	if ls := l.Servers[server]; ls != nil {
		defs = *ls.of(b.kind)
	}
	offered := capsNames(caps)
	obs := map[string]*observed{}
	for i, name := range b.keys {
		var base *LockDef
		trusted := false
		for _, d := range defs[name] {
			if !subset(d.Capabilities, offered) {
				continue
			}
			if base == nil || d.Digest == b.digests[i] {
				base = d
			}
			if d.Digest == b.digests[i] {
				trusted = true
				break
			}
		}
		fl := s.flagsOf(server, b, i)
		if trusted {
			if len(fl) == 0 {
				continue
			}
			reviewed := reviewedIn(defs[name], b.digests[i])
			v.flag(name, fl, reviewed)
			if !reviewed && len(obs) < maxObserved {
				// The lock holds it, unreviewed: refused where the scan
				// blocks, so pins diff shows why (the flags, no change).
				if _, dup := obs[name]; !dup {
					obs[name] = &observed{caps: caps, digest: b.digests[i], def: base.Definition, base: base.Definition, what: []string{WhatFlagged}, flags: fl}
				}
			}
			continue
		}
		if len(fl) > 0 {
			v.flag(name, fl, false)
		}
		c, err := b.canon(i)
		if err != nil {
			c = unencodable(b.kind, name)
		}
		o := &observed{caps: caps, digest: b.digests[i], def: c, what: []string{WhatNew}, flags: fl}
		if base != nil {
			o.base = base.Definition
			o.what = what(b.kind, base.Definition, c)
		}
		if v.Changed == nil {
			v.Changed = map[string][]string{}
		}
		if _, dup := v.Changed[name]; !dup {
			v.Changed[name] = o.what
			if len(obs) < maxObserved {
				obs[name] = o
			}
		}
	}
	if s.observed == nil {
		s.observed = map[observedKey]map[string]*observed{}
	}
	s.observed[observedKey{server, caps, b.kind}] = obs
	return v
}

type observedKey struct {
	server, caps string
	kind         Kind
}

func reviewedIn(defs []*LockDef, digest string) bool {
	for _, d := range defs {
		if d.Digest == digest && d.Reviewed {
			return true
		}
	}
	return false
}

func subset(need, offered []string) bool {
	for _, n := range need {
		if !slices.Contains(offered, n) {
			return false
		}
	}
	return true
}

// diffLocked is what the lists read under a lock showed of server that
// the lock does not trust.
func (s *Store) diffLocked(server string) []ToolDiff {
	out := []ToolDiff{}
	var keys []observedKey
	for k := range s.observed {
		if k.server == server {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b observedKey) int {
		if c := strings.Compare(a.caps, b.caps); c != 0 {
			return c
		}
		return slices.Index(Kinds, a.kind) - slices.Index(Kinds, b.kind)
	})
	for _, k := range keys {
		m := s.observed[k]
		for _, name := range sortedKeys(m) {
			o := m[name]
			d := diffOf(o.caps, k.kind, name, o.what, o.base, o.def)
			d.Digest, d.Flags = o.digest, o.flags
			out = append(out, d)
		}
	}
	return out
}

// Locked reports whether the pins are a lock (the file is of kind lock, or
// Configure said the registry locks it): only ever read.
func (s *Store) Locked() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return s.cfg.Locked, err
	}
	return s.locked(), nil
}

func (s *Store) locked() bool {
	return s.cfg.Locked || (s.file != nil && s.file.lock != nil)
}

// lockedError is the refusal of a write to a lock.
func (s *Store) lockedError() error {
	return &LockedError{Path: s.path, Kind: s.file != nil && s.file.lock != nil}
}

// errLockMissing is a lock that is not there: nothing would be trusted.
var errLockMissing = errors.New(`does not exist, and the registry says "pin": "locked", under which colibri only reads it: ship the lock there (colibri-mcp pins export --output FILE on the machine where the servers were pinned), or give --pin-file the path it lies at`)

// reportLock is a lock's servers as `colibri-mcp pins` shows them: one set
// each, "capabilities" naming it the lock's.
func reportLock(l *Lock, names []string) []ServerPins {
	out := []ServerPins{}
	for _, name := range names {
		ls := l.Servers[name]
		p := SetPins{Capabilities: "any (lock)", Tools: []ToolPin{}, Changed: []Change{}}
		for _, k := range Kinds {
			list := p.pinsOf(k)
			m := *ls.of(k)
			for _, key := range sortedKeys(m) {
				for _, d := range m[key] {
					*list = append(*list, ToolPin{Name: key, Digest: d.Digest, Reviewed: d.Reviewed, Flags: d.Flags.current(k, d.Definition)})
				}
			}
		}
		sp := ServerPins{Server: name, Sets: []SetPins{p}}
		if ls.RegistryEntry != nil {
			sp.Source = ls.RegistryEntry.Source
		}
		out = append(out, sp)
	}
	return out
}

// lockDefinitions are the tools a lock holds for server, those any
// session is offered first.
func lockDefinitions(l *Lock, server string) []Definition {
	ls := l.Servers[server]
	if ls == nil {
		return nil
	}
	var out, later []Definition
	for _, name := range sortedKeys(ls.Tools) {
		for _, d := range ls.Tools[name] {
			var t mcp.Tool
			if err := json.Unmarshal(d.Definition, &t); err != nil {
				continue
			}
			def := Definition{Server: server, Caps: Caps(d.Capabilities...), Tool: &t}
			if def.Caps == NoCaps {
				out = append(out, def)
			} else {
				later = append(later, def)
			}
		}
	}
	return append(out, later...)
}

// WriteLock writes an exported lock to path: a temporary file in the same
// folder, mode 0644 (a lock is read by the service's user, and may be
// root's), synced and renamed over path.
func WriteLock(path string, data []byte) error {
	return writeAtomic(path, data, 0o644)
}
