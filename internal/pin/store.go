package pin

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
	"unsafe"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Store.
type Options struct {
	// OnChange, when set, is told of each change when it is first seen (a
	// definition that differs from the pin, or a new tool, not seen before
	// in that form): the metric colibri_tool_changes_total and the log.
	OnChange func(server, caps, tool string, what []string)
	// LockTimeout bounds the wait for another process's lock on the file;
	// zero means DefaultLockTimeout.
	LockTimeout time.Duration
	// Now is the clock of the file's times; nil means time.Now.
	Now func() time.Time
}

// DefaultLockTimeout is how long a write waits for another process's lock.
const DefaultLockTimeout = 10 * time.Second

// Bounds of the in-memory caches: past them a cache starts again empty.
const (
	maxDigests  = 1 << 16
	maxVerdicts = 1024
)

// Store is the pins of one pin file, shared by every request of a process.
// It reads the file again when another process replaced it (one stat per
// Check), and writes it under the file's lock. It is safe for concurrent
// use.
type Store struct {
	path   string
	opts   Options
	broken error // Unusable's

	mu       sync.Mutex
	file     *File                             // as last read or written; nil until then
	info     os.FileInfo                       // of that version (nil: there was no file)
	readErr  error                             // the last read's failure, for that version
	gen      uint64                            // bumped whenever the pins in memory change
	digests  map[weak.Pointer[mcp.Tool]]string // weak: a list let go of is not kept alive here
	verdicts map[verdictKey]verdictEntry
}

// Open returns the Store of the pin file at path. Nothing is read until it
// is used.
func Open(path string, opts Options) *Store {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{path: path, opts: opts}
}

// Path is the pin file's path.
func (s *Store) Path() string { return s.path }

// Verdict is a list compared with its pins: the tools that changed, by
// name, with what changed in each (WhatNew for a tool not pinned). A tool
// not in Changed is as pinned.
type Verdict struct {
	Changed map[string][]string
}

// verdictKey names one list: lists are shared and never changed once read
// (the host's cache and warm sessions hand out the same slice), so the
// first tool (a weak pointer: equal only for that very tool, never for
// another at its address) and the length, with every tool's address, tell
// one from another.
type verdictKey struct {
	server, caps string
	first        weak.Pointer[mcp.Tool]
	n            int
	addrs        uint64 // FNV-1a of every tool's address: a list is never edited, but this costs little
}

type verdictEntry struct {
	gen uint64
	v   Verdict
}

// Generation changes whenever the pins this Store holds change (a record,
// an accept, another process's write read back): what was judged before
// may be judged differently now.
func (s *Store) Generation() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.refresh()
	return s.gen, err
}

// Check compares tools, the list server gave a session offered caps, with
// its pins. The first list of a server and capability set is pinned (and
// nothing in it is a change). A changed or new tool is recorded as pending
// the first time it is seen in that form (Options.OnChange is told); a tool
// that is as pinned again drops its pending change. A pin file that cannot
// be read or written is a *ConfigError.
func (s *Store) Check(server, caps string, tools []*mcp.Tool) (Verdict, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return Verdict{}, err
	}
	key := verdictKey{server: server, caps: caps, n: len(tools), addrs: 14695981039346656037}
	if len(tools) > 0 {
		key.first = weak.Make(tools[0])
	}
	for _, t := range tools {
		key.addrs ^= uint64(uintptr(unsafe.Pointer(t)))
		key.addrs *= 1099511628211
	}
	if e, ok := s.verdicts[key]; ok && e.gen == s.gen {
		return e.v, nil
	}
	digests := make([]string, len(tools))
	for i, t := range tools {
		digests[i] = s.digest(t)
	}
	set := s.file.Servers[server][caps]
	if set == nil && len(tools) == 0 {
		// An empty first list trusts nothing: a server that lists its
		// tools only once it is ready is pinned by its first real list.
		return Verdict{}, nil
	}
	if set == nil || s.stale(set, tools, digests) {
		// First sighting, or news to record: under the lock, against the
		// file as it is now (another process may have pinned it first).
		if err := s.update(func(f *File) bool { return record(f, server, caps, tools, digests, s.opts.Now(), s.opts.OnChange) }); err != nil {
			return Verdict{}, err
		}
		set = s.file.Servers[server][caps]
	}
	v := judge(set, tools, digests)
	if s.verdicts == nil || len(s.verdicts) >= maxVerdicts {
		s.verdicts = map[verdictKey]verdictEntry{}
	}
	s.verdicts[key] = verdictEntry{gen: s.gen, v: v}
	return v, nil
}

// digest is t's digest, computed once per decoded tool. A tool whose
// definition cannot be encoded gets a digest no pin has: it is a change.
func (s *Store) digest(t *mcp.Tool) string {
	key := weak.Make(t)
	if d, ok := s.digests[key]; ok {
		return d
	}
	d := "sha256:unencodable"
	if c, err := Canonical(t); err == nil {
		d = Digest(c)
	}
	if s.digests == nil || len(s.digests) >= maxDigests {
		s.digests = map[weak.Pointer[mcp.Tool]]string{}
	}
	s.digests[key] = d
	return d
}

// stale reports whether set lacks news of tools: a change not yet pending
// in this form, or a pending change the list no longer shows.
func (s *Store) stale(set *Set, tools []*mcp.Tool, digests []string) bool {
	seen := make(map[string]bool, len(tools))
	for _, i := range listed(set, tools, digests) {
		t := tools[i]
		seen[t.Name] = true
		p := set.Tools[t.Name]
		q := set.Pending[t.Name]
		switch {
		case p != nil && p.Digest == digests[i]:
			if q != nil {
				return true
			}
		case q == nil || q.Digest != digests[i]:
			return true
		}
	}
	for name := range set.Pending {
		if !seen[name] {
			return true
		}
	}
	return false
}

// record writes what tools say into f: the whole set when server has no
// pins for caps, else each change not yet pending in this form. It
// reports whether f changed.
func record(f *File, server, caps string, tools []*mcp.Tool, digests []string, now time.Time, onChange func(string, string, string, []string)) bool {
	sets := f.Servers[server]
	if sets == nil {
		sets = map[string]*Set{}
		f.Servers[server] = sets
	}
	set := sets[caps]
	changed := false
	if set == nil {
		// The server's first list is pinned as it is. A later capability
		// set starts from the pins the server already has: a tool pinned
		// in another set keeps that pin, and a tool new to the server is
		// new here too (pending, not trusted), so that a rug pull does not
		// slip in with the first caller that offers a capability (most
		// editors offer roots; list_tools offers none).
		first := len(sets) == 0
		set = &Set{Pinned: now.UTC(), Tools: map[string]*Entry{}}
		for i, t := range tools {
			if _, dup := set.Tools[t.Name]; dup {
				continue
			}
			if p := pinnedElsewhere(sets, t.Name); p != nil {
				set.Tools[t.Name] = &Entry{Digest: p.Digest, Definition: p.Definition}
				continue
			}
			if !first {
				continue
			}
			if c, err := Canonical(t); err == nil && Digest(c) == digests[i] {
				set.Tools[t.Name] = &Entry{Digest: digests[i], Definition: c}
			}
		}
		sets[caps] = set
		changed = true
	}
	seen := make(map[string]bool, len(tools))
	for _, i := range listed(set, tools, digests) {
		t := tools[i]
		seen[t.Name] = true
		p, q := set.Tools[t.Name], set.Pending[t.Name]
		if p != nil && p.Digest == digests[i] {
			if q != nil {
				delete(set.Pending, t.Name)
				changed = true
			}
			continue
		}
		if q != nil && q.Digest == digests[i] {
			continue
		}
		c, err := Canonical(t)
		if err != nil {
			c = []byte(`{"name":` + quote(t.Name) + `}`)
		}
		w := []string{WhatNew}
		if p != nil {
			w = what(p.Definition, c)
		}
		at := now.UTC()
		if set.Pending == nil {
			set.Pending = map[string]*Entry{}
		}
		set.Pending[t.Name] = &Entry{Digest: digests[i], Definition: c, What: w, Seen: &at}
		changed = true
		if onChange != nil && !pendingElsewhere(sets, caps, t.Name, digests[i]) {
			onChange(server, caps, t.Name, w) // once per change, however many capability sets see it
		}
	}
	// Pending changes are those of the list seen last: a server that lists
	// new names at every read must not grow the file without bound.
	for name := range set.Pending {
		if !seen[name] {
			delete(set.Pending, name)
			changed = true
		}
	}
	return changed
}

// listed is the index in tools of each name's definition, in the order
// the names first appear: of a name listed more than once, the first
// definition that differs from its pin (else the first). judge hides a
// name any of whose definitions differs; this is the one recorded as its
// change, so that `pins diff` shows it, the change is counted and logged,
// and an operator can see what the server lists (a list that names a tool
// twice with two definitions never matches one pin: it stays hidden).
func listed(set *Set, tools []*mcp.Tool, digests []string) []int {
	at := make(map[string]int, len(tools))
	out := make([]int, 0, len(tools))
	for i, t := range tools {
		j, dup := at[t.Name]
		if !dup {
			at[t.Name] = len(out)
			out = append(out, i)
			continue
		}
		if p := set.Tools[t.Name]; p != nil && p.Digest == digests[out[j]] && p.Digest != digests[i] {
			out[j] = i
		}
	}
	return out
}

// pinnedElsewhere is name's pin in another of a server's capability sets
// (NoCaps first), or nil.
func pinnedElsewhere(sets map[string]*Set, name string) *Entry {
	if set := sets[NoCaps]; set != nil && set.Tools[name] != nil {
		return set.Tools[name]
	}
	for _, caps := range sortedKeys(sets) {
		if p := sets[caps].Tools[name]; p != nil {
			return p
		}
	}
	return nil
}

// pendingElsewhere reports whether another of a server's capability sets
// than caps already holds this change of name pending.
func pendingElsewhere(sets map[string]*Set, caps, name, digest string) bool {
	for c, set := range sets {
		if q := set.Pending[name]; c != caps && q != nil && q.Digest == digest {
			return true
		}
	}
	return false
}

// judge compares tools with set.
func judge(set *Set, tools []*mcp.Tool, digests []string) Verdict {
	var v Verdict
	for i, t := range tools {
		p := set.Tools[t.Name]
		if p != nil && p.Digest == digests[i] {
			continue
		}
		w := []string{WhatNew}
		if q := set.Pending[t.Name]; q != nil && q.Digest == digests[i] {
			w = q.What
		} else if p != nil {
			c, _ := Canonical(t)
			w = what(p.Definition, c)
		}
		if v.Changed == nil {
			v.Changed = map[string][]string{}
		}
		if _, dup := v.Changed[t.Name]; !dup {
			v.Changed[t.Name] = w
		}
	}
	return v
}

// refresh reads the file again when it is not the version last read (one
// stat when it is). A failure stays until the file changes.
func (s *Store) refresh() error {
	if s.broken != nil {
		return s.broken
	}
	st, err := os.Lstat(s.path)
	if err != nil && !os.IsNotExist(err) {
		s.readErr = &ConfigError{Path: s.path, Err: fmt.Errorf("cannot be read (colibri will not treat it as empty, which would trust every tool again): %w", err)}
		s.gen++
		return s.readErr
	}
	if err != nil {
		st = nil
	}
	if s.file != nil || s.readErr != nil {
		if sameFile(s.info, st) {
			return s.readErr
		}
	}
	f, info, err := readFile(s.path)
	s.gen++
	s.info = st
	if err != nil {
		s.readErr = err
		return err
	}
	s.file, s.info, s.readErr = f, info, nil
	return nil
}

// update runs change on the file as it is under the lock, and writes it
// when change reports a change. The Store then holds what was written.
// s.mu is held on entry and on return, but not while another process's
// lock is waited for (up to LockTimeout): a stuck `pins accept`, or a
// second colibri, must not hold up the checks of every other server and
// call of this process, which need no write (only this one waits, and
// fails config). Whatever was read before is read again under the lock.
func (s *Store) update(change func(*File) bool) error {
	if s.broken != nil {
		return s.broken
	}
	s.mu.Unlock()
	unlock, err := lock(s.path, s.opts.LockTimeout)
	s.mu.Lock()
	if err != nil {
		return &ConfigError{Path: s.path, Err: fmt.Errorf("cannot be locked: %w", err)}
	}
	defer unlock()
	f, info, err := readFile(s.path)
	if err != nil {
		s.readErr = err
		s.gen++
		return err
	}
	s.file, s.info, s.readErr = f, info, nil
	s.gen++
	if !change(f) {
		return nil
	}
	info, err = write(s.path, f)
	if err != nil {
		s.file, s.info = nil, nil // read again: what is in memory was not written
		return &ConfigError{Path: s.path, Err: fmt.Errorf("cannot be written: %w", err)}
	}
	s.info = info
	return nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
