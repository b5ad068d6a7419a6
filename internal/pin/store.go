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
	// The kind says what the name is of (a tool's name, a prompt's, a
	// template's uriTemplate, a resource's uri, InstructionsName).
	OnChange func(kind Kind, server, caps, name string, what []string)
	// OnFlag, when set, is told of each sign of poisoning the scan finds
	// in a definition when the definition is first recorded (pinned or
	// pending): colibri_pin_flags_total{server,flag} and the log.
	OnFlag func(kind Kind, server, name string, f Flag)
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
	cfg      Config
	file     *File // as last read or written; nil until then
	view     *Lock // lockView's, of generation viewGen
	viewGen  uint64
	observed map[observedKey]map[string]*observed // under a lock: what lists showed that it does not trust
	info     os.FileInfo                          // of that version (nil: there was no file)
	readErr  error                                // the last read's failure, for that version
	gen      uint64                               // bumped whenever the pins in memory change
	digests  map[any]string                       // by weak.Pointer: a list let go of is not kept alive here
	scans    map[string][]Flag                    // by digest: the scan of a definition, once
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

// Config is what the pins are told of the registry, by whoever reads it
// (tools at each new version of the registry, the command line once).
type Config struct {
	// Locked: the registry says "pin": "locked". The pin file is only
	// ever read, and what it does not hold is not trusted (a file of kind
	// lock is read so whatever the registry says).
	Locked bool
	// Entries are the fingerprints of the registry's entries, by server:
	// recorded with a server's first pins and with each accept, and
	// compared by `pins diff` and `check`.
	Entries map[string]*Fingerprint
	// NoScan are the servers whose "pin_scan" is "off": their definitions
	// are not scanned, nor flagged.
	NoScan map[string]bool
}

// Configure tells the pins what the registry says now. What was judged
// under another Locked is judged again.
func (s *Store) Configure(c Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Locked != s.cfg.Locked {
		s.gen++
		s.file, s.info, s.readErr = nil, nil, nil // read again, under the rules of a lock (or not)
	}
	s.cfg = c
}

// Verdict is a list compared with its pins: the definitions that changed,
// by name (a tool's or prompt's name, a template's uriTemplate, a
// resource's uri, InstructionsName), with what changed in each (WhatNew
// for one not pinned). A definition not in Changed is as pinned.
type Verdict struct {
	Changed map[string][]string
	// Locked: judged against a lock, where a definition it does not hold
	// is "not in the locked pin file" rather than new.
	Locked bool
	// Flags are, by name, the signs of poisoning the scan finds in each
	// listed definition that has any (changed or not; never shadowing,
	// which needs the other servers' lists: the caller adds it).
	Flags map[string]Flagged
}

// Flagged is what the scan found in one listed definition, and whether a
// person accepted that very definition (`pins accept`, a lock's review
// mark): "pin_scan": "block" and a lock refuse a flagged definition only
// until then.
type Flagged struct {
	Flags    []Flag
	Reviewed bool
}

func (v *Verdict) flag(name string, flags []Flag, reviewed bool) {
	if v.Flags == nil {
		v.Flags = map[string]Flagged{}
	}
	if _, dup := v.Flags[name]; !dup {
		v.Flags[name] = Flagged{Flags: flags, Reviewed: reviewed}
	}
}

// verdictKey names one list: lists are shared and never changed once read
// (the host's cache and warm sessions hand out the same slice), so the
// first definition (a weak pointer: equal only for that very one, never
// for another at its address) and the length, with every definition's
// address, tell one from another.
type verdictKey struct {
	kind         Kind
	server, caps string
	first        any // a weak.Pointer of the list's first definition
	n            int
	addrs        uint64 // FNV-1a of every definition's address: a list is never edited, but this costs little
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
	return check(s, KindTool, server, caps, tools)
}

// CheckPrompts is Check of a prompt list (prompts/list), matched by name.
func (s *Store) CheckPrompts(server, caps string, prompts []*mcp.Prompt) (Verdict, error) {
	return check(s, KindPrompt, server, caps, prompts)
}

// CheckTemplates is Check of a resource template list
// (resources/templates/list), matched by uriTemplate.
func (s *Store) CheckTemplates(server, caps string, templates []*mcp.ResourceTemplate) (Verdict, error) {
	return check(s, KindTemplate, server, caps, templates)
}

// CheckResources is Check of a resource list (resources/list), matched by
// uri: for a server whose entry says "pin_resources": true only (its
// resources otherwise change by the minute).
func (s *Store) CheckResources(server, caps string, resources []*mcp.Resource) (Verdict, error) {
	return check(s, KindResource, server, caps, resources)
}

// CheckInstructions is Check of a server's instructions (its initialize
// result's, "" when it gave none; an absent text is pinned too, so that
// instructions that appear later are a change). Changed holds
// InstructionsName when they differ from the pin: they are withheld from
// the caller until accepted.
func (s *Store) CheckInstructions(server, caps string, in *Instructions) (Verdict, error) {
	if in == nil {
		in = &Instructions{}
	}
	return check(s, KindInstructions, server, caps, []*Instructions{in})
}

// definition is what check judges: a definition of one kind.
type definition interface {
	mcp.Tool | mcp.Prompt | mcp.ResourceTemplate | mcp.Resource | Instructions
}

// keyOf is what d is matched by: a tool's or prompt's name, a template's
// uriTemplate, a resource's uri, InstructionsName.
func keyOf(d any) string {
	switch d := d.(type) {
	case *mcp.Tool:
		return d.Name
	case *mcp.Prompt:
		return d.Name
	case *mcp.ResourceTemplate:
		return d.URITemplate
	case *mcp.Resource:
		return d.URI
	}
	return InstructionsName
}

// canonicalOf is d's canonical definition.
func canonicalOf(d any) ([]byte, error) {
	switch d := d.(type) {
	case *mcp.Tool:
		return Canonical(d)
	case *mcp.Prompt:
		return CanonicalPrompt(d)
	case *mcp.ResourceTemplate:
		return CanonicalTemplate(d)
	case *mcp.Resource:
		return CanonicalResource(d)
	case *Instructions:
		return CanonicalInstructions(d.Text)
	}
	return nil, fmt.Errorf("not a definition: %T", d)
}

// check compares list, of kind, with its pins (Check says how).
func check[T definition](s *Store, kind Kind, server, caps string, list []*T) (Verdict, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return Verdict{}, err
	}
	key := verdictKey{kind: kind, server: server, caps: caps, n: len(list), addrs: 14695981039346656037}
	if len(list) > 0 {
		key.first = weak.Make(list[0])
	}
	for _, d := range list {
		key.addrs ^= uint64(uintptr(unsafe.Pointer(d)))
		key.addrs *= 1099511628211
	}
	if e, ok := s.verdicts[key]; ok && e.gen == s.gen {
		return e.v, nil
	}
	b := batch{kind: kind, keys: make([]string, len(list)), digests: make([]string, len(list)),
		canon: func(i int) ([]byte, error) { return canonicalOf(list[i]) }}
	if kind == KindTool {
		b.scan = func(i int) []Flag { return ScanTool(any(list[i]).(*mcp.Tool)) }
	}
	for i, d := range list {
		b.keys[i] = keyOf(d)
		b.digests[i] = digestOf(s, d)
	}
	if s.locked() {
		v := s.judgeLocked(server, caps, b)
		s.remember(key, v)
		return v, nil
	}
	set := s.file.Servers[server][caps]
	if !set.seen(kind) && len(list) == 0 {
		// An empty first list trusts nothing: a server that lists its
		// tools only once it is ready is pinned by its first real list.
		return Verdict{}, nil
	}
	if !set.seen(kind) || s.stale(set, b) {
		// First sighting, or news to record: under the lock, against the
		// file as it is now (another process may have pinned it first).
		entry := s.cfg.Entries[server]
		scan := func(i int) *Flags {
			if s.cfg.NoScan[server] {
				return nil
			}
			return &Flags{Scanner: ScannerVersion, Found: s.flagsOf(server, b, i)}
		}
		var found []func()
		if err := s.update(func(f *File) bool {
			found = nil
			return record(f, server, caps, b, entry, scan, s.opts.Now(), s.opts.OnChange, func(k Kind, name string, fl *Flags) {
				if s.opts.OnFlag != nil && fl != nil {
					for _, one := range fl.Found {
						found = append(found, func() { s.opts.OnFlag(k, server, name, one) })
					}
				}
			})
		}); err != nil {
			return Verdict{}, err
		}
		for _, tell := range found {
			tell()
		}
		set = s.file.Servers[server][caps]
	}
	v := judge(set, b)
	for i, name := range b.keys {
		if fl := s.flagsOf(server, b, i); len(fl) > 0 {
			p, _ := set.pins(kind)
			reviewed := p[name] != nil && p[name].Digest == b.digests[i] && p[name].Reviewed
			v.flag(name, fl, reviewed)
		}
	}
	s.remember(key, v)
	return v, nil
}

// remember keeps v as the verdict of the list key names, for the pins as
// they are now.
func (s *Store) remember(key verdictKey, v Verdict) {
	if s.verdicts == nil || len(s.verdicts) >= maxVerdicts {
		s.verdicts = map[verdictKey]verdictEntry{}
	}
	s.verdicts[key] = verdictEntry{gen: s.gen, v: v}
}

// batch is one list being judged: each definition's key and digest, in
// the list's order, and its canonical definition when it is recorded.
type batch struct {
	kind    Kind
	keys    []string
	digests []string
	canon   func(i int) ([]byte, error)
	scan    func(i int) []Flag // the scan of definition i, when cheaper than Scan of canon's (tools); nil: Scan
}

// digestOf is d's digest, computed once per decoded definition. One whose
// definition cannot be encoded gets a digest no pin has: it is a change.
func digestOf[T definition](s *Store, d *T) string {
	key := weak.Make(d)
	if got, ok := s.digests[key]; ok {
		return got
	}
	got := "sha256:unencodable"
	if c, err := canonicalOf(d); err == nil {
		got = Digest(c)
	}
	if s.digests == nil || len(s.digests) >= maxDigests {
		s.digests = map[any]string{}
	}
	s.digests[key] = got
	return got
}

// stale reports whether set lacks news of b: a change not yet pending in
// this form, or a pending change the list no longer shows.
func (s *Store) stale(set *Set, b batch) bool {
	pinned, pending := set.pins(b.kind)
	seen := make(map[string]bool, len(b.keys))
	for _, i := range listed(pinned, b) {
		name := b.keys[i]
		seen[name] = true
		p, q := pinned[name], pending[name]
		switch {
		case p != nil && p.Digest == b.digests[i]:
			if q != nil {
				return true
			}
		case q == nil || q.Digest != b.digests[i]:
			return true
		}
	}
	for name := range pending {
		if !seen[name] {
			return true
		}
	}
	return false
}

// record writes what b says into f: the whole list when server has no
// pins of its kind (in any capability set), the pins the server has
// elsewhere when caps is new to it, and then each change not yet pending
// in this form. It reports whether f changed.
func record(f *File, server, caps string, b batch, entry *Fingerprint, scan func(int) *Flags, now time.Time, onChange func(Kind, string, string, string, []string), onFlags func(Kind, string, *Flags)) bool {
	sets := f.Servers[server]
	if sets == nil {
		sets = map[string]*Set{}
		f.Servers[server] = sets
	}
	set := sets[caps]
	changed := false
	if set == nil {
		set = &Set{Pinned: now.UTC(), Entry: entry}
		sets[caps] = set
		changed = true
	}
	if !set.seen(b.kind) {
		// The server's first list of a kind is pinned as it is. A later
		// capability set starts from the pins the server already has: a
		// definition pinned in another set keeps that pin, and one new
		// to the server is new here too (pending, not trusted), so that a
		// rug pull does not slip in with the first caller that offers a
		// capability (most editors offer roots; list_tools offers none).
		first := !slices.ContainsFunc(sortedKeys(sets), func(c string) bool { return c != caps && sets[c].seen(b.kind) })
		pinnedP, _ := set.maps(b.kind)
		for i, name := range b.keys {
			if _, dup := (*pinnedP)[name]; dup {
				continue
			}
			if p := pinnedElsewhere(sets, b.kind, name); p != nil {
				(*pinnedP)[name] = &Entry{Digest: p.Digest, Definition: p.Definition, Reviewed: p.Reviewed, Flags: p.Flags}
				continue
			}
			if !first {
				continue
			}
			if c, err := b.canon(i); err == nil && Digest(c) == b.digests[i] {
				fl := scan(i)
				(*pinnedP)[name] = &Entry{Digest: b.digests[i], Definition: c, Flags: fl}
				onFlags(b.kind, name, fl)
			}
		}
		changed = true
	}
	pinnedP, pendingP := set.maps(b.kind)
	pinned := *pinnedP
	seen := make(map[string]bool, len(b.keys))
	for _, i := range listed(pinned, b) {
		name := b.keys[i]
		seen[name] = true
		p, q := pinned[name], (*pendingP)[name]
		if p != nil && p.Digest == b.digests[i] {
			if q != nil {
				delete(*pendingP, name)
				changed = true
			}
			continue
		}
		if q != nil && q.Digest == b.digests[i] {
			continue
		}
		c, err := b.canon(i)
		if err != nil {
			c = unencodable(b.kind, name)
		}
		w := []string{WhatNew}
		if p != nil {
			w = what(b.kind, p.Definition, c)
		}
		at := now.UTC()
		if *pendingP == nil {
			*pendingP = map[string]*Entry{}
		}
		fl := scan(i)
		(*pendingP)[name] = &Entry{Digest: b.digests[i], Definition: c, What: w, Seen: &at, Flags: fl}
		onFlags(b.kind, name, fl)
		changed = true
		if onChange != nil && !pendingElsewhere(sets, b.kind, caps, name, b.digests[i]) {
			onChange(b.kind, server, caps, name, w) // once per change, however many capability sets see it
		}
	}
	// Pending changes are those of the list seen last: a server that lists
	// new names at every read must not grow the file without bound.
	for name := range *pendingP {
		if !seen[name] {
			delete(*pendingP, name)
			changed = true
		}
	}
	return changed
}

// unencodable is the definition recorded for one whose canonical form
// could not be made: its key alone.
func unencodable(k Kind, name string) []byte {
	key := keyField[k]
	if key == "" {
		key = "instructions"
	}
	return []byte(`{` + quote(key) + `:` + quote(name) + `}`)
}

// listed is the index in b of each name's definition, in the order the
// names first appear: of a name listed more than once, the first
// definition that differs from its pin (else the first). judge hides a
// name any of whose definitions differs; this is the one recorded as its
// change, so that `pins diff` shows it, the change is counted and logged,
// and an operator can see what the server lists (a list that names a tool
// twice with two definitions never matches one pin: it stays hidden).
func listed(pinned map[string]*Entry, b batch) []int {
	at := make(map[string]int, len(b.keys))
	out := make([]int, 0, len(b.keys))
	for i, name := range b.keys {
		j, dup := at[name]
		if !dup {
			at[name] = len(out)
			out = append(out, i)
			continue
		}
		if p := pinned[name]; p != nil && p.Digest == b.digests[out[j]] && p.Digest != b.digests[i] {
			out[j] = i
		}
	}
	return out
}

// pinnedElsewhere is name's pin of kind k in another of a server's
// capability sets (NoCaps first), or nil.
func pinnedElsewhere(sets map[string]*Set, k Kind, name string) *Entry {
	if pinned, _ := sets[NoCaps].pins(k); pinned[name] != nil {
		return pinned[name]
	}
	for _, caps := range sortedKeys(sets) {
		if pinned, _ := sets[caps].pins(k); pinned[name] != nil {
			return pinned[name]
		}
	}
	return nil
}

// pendingElsewhere reports whether another of a server's capability sets
// than caps already holds this change of name pending.
func pendingElsewhere(sets map[string]*Set, k Kind, caps, name, digest string) bool {
	for c, set := range sets {
		if _, pending := set.pins(k); c != caps && pending[name] != nil && pending[name].Digest == digest {
			return true
		}
	}
	return false
}

// judge compares b with set.
func judge(set *Set, b batch) Verdict {
	var v Verdict
	pinned, pending := set.pins(b.kind)
	for i, name := range b.keys {
		p := pinned[name]
		if p != nil && p.Digest == b.digests[i] {
			continue
		}
		w := []string{WhatNew}
		if q := pending[name]; q != nil && q.Digest == b.digests[i] {
			w = q.What
		} else if p != nil {
			c, _ := b.canon(i)
			w = what(b.kind, p.Definition, c)
		}
		if v.Changed == nil {
			v.Changed = map[string][]string{}
		}
		if _, dup := v.Changed[name]; !dup {
			v.Changed[name] = w
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
	f, info, err := readFile(s.path, s.cfg.Locked)
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
	if s.locked() {
		return s.lockedError() // never written, no lock file made beside it
	}
	s.mu.Unlock()
	unlock, err := lock(s.path, s.opts.LockTimeout)
	s.mu.Lock()
	if err != nil {
		return &ConfigError{Path: s.path, Err: fmt.Errorf("cannot be locked: %w", err)}
	}
	defer unlock()
	f, info, err := readFile(s.path, s.cfg.Locked)
	if err != nil {
		s.readErr = err
		s.gen++
		return err
	}
	if f.lock != nil {
		s.file, s.info, s.readErr = f, info, nil
		s.gen++
		return s.lockedError() // replaced by a lock since it was read
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
