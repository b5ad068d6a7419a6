package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
)

// Version is the latest format of the pin file this colibri reads and
// writes. A file of a later version is refused, never read as far as it
// goes: what it holds may mean more than this colibri knows. Within a
// version, members this colibri does not know are ignored (a later colibri
// adds members older readers may ignore under the same version).
//
// Version 1 (colibri before pins of prompts, templates, resources and
// instructions) refuses any member it does not know: a file is written as
// version 1 while it holds nothing version 1 lacks, so that the colibri
// before this one still reads it, and as version 2 once it does, which
// that colibri refuses naming the version (docs/security.md, pinned tool definitions).
const Version = 2

// MaxFileBytes bounds the pin file colibri reads: far more than the pins of
// many servers, each of whose lists is itself bounded (COLIBRI_MCP_MAX_RESULT_BYTES).
const MaxFileBytes = 64 << 20

// File is the pin file: by server, by capability set (Caps), the pinned
// definitions and the changes seen since.
type File struct {
	Version int                        `json:"version"`
	Servers map[string]map[string]*Set `json:"servers"`

	// lock is the file's content when it is of kind "lock" (Servers is
	// then empty): only ever read.
	lock *Lock
}

// Set is the pins of one server for one set of capabilities offered.
type Set struct {
	// Pinned is when the set was first pinned.
	Pinned time.Time `json:"pinned"`
	// Tools are the pinned definitions, by name: the set of names is theirs.
	Tools map[string]*Entry `json:"tools"`
	// Pending are the definitions seen since that differ from the pins
	// (or are new), by name: the last one seen of each. `pins accept`
	// makes them the pins.
	Pending map[string]*Entry `json:"pending,omitempty"`

	// Entry is the fingerprint of the server's registry entry when the set
	// was pinned, or last accepted: a later entry that differs is an
	// upgrade (pins diff says which members changed).
	Entry *Fingerprint `json:"registry_entry,omitempty"`

	// The other kinds, each like Tools and Pending (absent: never seen;
	// a version 1 file has none): prompts by name, templates by
	// uriTemplate, resources by uri, the instructions under
	// InstructionsName.
	Prompts      *Group `json:"prompts,omitempty"`
	Templates    *Group `json:"templates,omitempty"`
	Resources    *Group `json:"resources,omitempty"`
	Instructions *Group `json:"instructions,omitempty"`
}

// Group is the pins of one kind other than tools in a Set.
type Group struct {
	Pinned  map[string]*Entry `json:"pinned"`
	Pending map[string]*Entry `json:"pending,omitempty"`
}

// group is the place of kind k's group in set (nil for tools).
func (set *Set) group(k Kind) **Group {
	switch k {
	case KindPrompt:
		return &set.Prompts
	case KindTemplate:
		return &set.Templates
	case KindResource:
		return &set.Resources
	case KindInstructions:
		return &set.Instructions
	}
	return nil
}

// pins are kind k's pinned and pending definitions in set (nil maps when
// the kind was never seen there).
func (set *Set) pins(k Kind) (pinned, pending map[string]*Entry) {
	if set == nil {
		return nil, nil
	}
	g := set.group(k)
	if g == nil {
		return set.Tools, set.Pending
	}
	if *g == nil {
		return nil, nil
	}
	return (*g).Pinned, (*g).Pending
}

// seen reports whether kind k was pinned in set (its first list, even an
// empty one inherited, was recorded).
func (set *Set) seen(k Kind) bool {
	pinned, _ := set.pins(k)
	return pinned != nil
}

// maps are the places of kind k's pinned and pending maps in set, made
// when missing: for writing.
func (set *Set) maps(k Kind) (pinned, pending *map[string]*Entry) {
	g := set.group(k)
	if g == nil {
		if set.Tools == nil {
			set.Tools = map[string]*Entry{}
		}
		return &set.Tools, &set.Pending
	}
	if *g == nil {
		*g = &Group{Pinned: map[string]*Entry{}}
	}
	if (*g).Pinned == nil {
		(*g).Pinned = map[string]*Entry{}
	}
	return &(*g).Pinned, &(*g).Pending
}

// Entry is one tool's canonical definition and its digest.
type Entry struct {
	Digest     string          `json:"digest"`
	Definition json.RawMessage `json:"definition"`
	// What differs from the pin (pending entries only).
	What []string `json:"what,omitempty"`
	// Seen is when this pending definition was first seen.
	Seen *time.Time `json:"seen,omitempty"`
	// Reviewed: `pins diff` showed this pending definition (this very
	// digest): `pins accept` accepts only such. A server that lists
	// another definition since gets a new, unreviewed entry.
	Reviewed bool `json:"reviewed,omitempty"`
	// Flags are what the poisoning scan found in this definition when it
	// was recorded, with the scanner's version (absent: recorded before
	// the scan, or with "pin_scan": "off").
	Flags *Flags `json:"flags,omitempty"`
}

// ConfigError is a pin file that cannot be read, parsed or written: the
// request fails (kind config) rather than trust what it would have checked.
type ConfigError struct {
	Path string
	Err  error
}

func (e *ConfigError) Error() string { return fmt.Sprintf("pin file %s: %v", e.Path, e.Err) }
func (e *ConfigError) Unwrap() error { return e.Err }

// readFile reads and checks the pin file at path; a missing file is an
// empty one (nothing pinned yet), with a nil info.
// Under a lock (locked: the registry says "pin": "locked"), and for a
// file of kind lock whatever the registry says, the file must exist, and
// root may own it and others read it (it ships in an image).
func readFile(path string, locked bool) (*File, os.FileInfo, error) {
	data, err := safefile.ReadFile(path, MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		if locked {
			return nil, nil, &ConfigError{Path: path, Err: errLockMissing}
		}
		return &File{Version: Version, Servers: map[string]map[string]*Set{}}, nil, nil
	}
	if errors.Is(err, safefile.ErrNotRegular) && locked {
		return nil, nil, &ConfigError{Path: path, Err: fmt.Errorf("cannot be read as a lock (%w): put the file itself at that path (install -m 0644 pins.lock %s), not a link to it", err, path)}
	}
	if err != nil {
		return nil, nil, &ConfigError{Path: path, Err: fmt.Errorf("cannot be read (colibri will not treat it as empty, which would trust every tool again): %w", err)}
	}
	st, err := os.Lstat(path)
	if err != nil {
		return nil, nil, &ConfigError{Path: path, Err: err}
	}
	if err := json.Unmarshal(data, new(any)); err != nil && locked {
		// A lock is never pinned again from the next listing: moving it
		// away trusts nothing (errLockMissing).
		return nil, nil, &ConfigError{Path: path, Err: fmt.Errorf("is not valid JSON (%v), and colibri only reads a lock: export it again where the servers are pinned (colibri-mcp pins export --output FILE) and ship it here", err)}
	}
	f, err := parse(data)
	if err != nil {
		return nil, nil, &ConfigError{Path: path, Err: err}
	}
	if err := trusted(st, locked || f.lock != nil); err != nil {
		return nil, nil, &ConfigError{Path: path, Err: err}
	}
	return f, st, nil
}

// parse decodes and checks a pin file's content.
func parse(data []byte) (*File, error) {
	var head struct {
		Version *int   `json:"version"`
		Kind    string `json:"kind"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("is not valid JSON (%v): restore it from a backup, or move it away to pin every server again from its next listing", err)
	}
	switch {
	case head.Version == nil:
		return nil, errors.New(`has no "version": it is not a colibri-mcp pin file`)
	case *head.Version > Version:
		return nil, fmt.Errorf("was written by a newer colibri-mcp (format version %d; this one reads %d): upgrade colibri-mcp, or give this one a pin file of its own (--pin-file)", *head.Version, Version)
	case *head.Version < 1:
		return nil, fmt.Errorf("has format version %d, which no colibri-mcp writes", *head.Version)
	case head.Kind == LockKind:
		l, err := parseLock(data)
		if err != nil {
			return nil, err
		}
		return &File{Version: *head.Version, Servers: map[string]map[string]*Set{}, lock: l}, nil
	case head.Kind != "":
		return nil, fmt.Errorf("is of kind %q, which this colibri-mcp does not know (it reads pin files and locks, kind %q)", head.Kind, LockKind)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if *head.Version == 1 {
		dec.DisallowUnknownFields() // as version 1 readers did: nothing in it is new
	}
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("is not a pin file colibri-mcp can read (%v): restore it from a backup, or move it away to pin every server again from its next listing", err)
	}
	if f.Servers == nil {
		f.Servers = map[string]map[string]*Set{}
	}
	for server, sets := range f.Servers {
		for caps, set := range sets {
			if set == nil {
				delete(sets, caps)
				continue
			}
			if *head.Version == 1 {
				if set.Entry != nil || set.Prompts != nil || set.Templates != nil || set.Resources != nil || set.Instructions != nil {
					return nil, fmt.Errorf("server %q: a version 1 pin file holds pins of prompts, templates, resources or instructions, which only version 2 has: it was edited by hand, or is not a colibri-mcp pin file", server)
				}
				if set.Tools == nil {
					set.Tools = map[string]*Entry{} // as version 1 read it
				}
			}
			// A kind's absent pins (a null "tools" too) mean it was never
			// seen in this set: its first list is pinned.
			for _, k := range Kinds {
				pinned, pending := set.pins(k)
				for _, m := range []map[string]*Entry{pinned, pending} {
					for name, e := range m {
						if e == nil || len(e.Digest) != len("sha256:")+64 || e.Digest[:7] != "sha256:" {
							return nil, fmt.Errorf("server %q, %s %q: a digest that is not sha256:<64 hex digits>", server, k, name)
						}
					}
				}
			}
		}
	}
	return &f, nil
}

// version is the oldest format that holds f: 1 while nothing in it is
// new since version 1, else Version.
func version(f *File) int {
	for _, sets := range f.Servers {
		for _, set := range sets {
			if set.Tools == nil || set.Entry != nil || set.Prompts != nil || set.Templates != nil || set.Resources != nil || set.Instructions != nil {
				return Version
			}
			// The scan's flags are a member version 1 readers refuse as
			// unknown ("is not a pin file … can read", and move it away):
			// a file that holds them is version 2, which they refuse
			// naming the version.
			for _, m := range []map[string]*Entry{set.Tools, set.Pending} {
				for _, e := range m {
					if e.Flags != nil {
						return Version
					}
				}
			}
		}
	}
	return 1
}

// write replaces the file at path with f, atomically: a temporary file in
// the same folder (mode 0600), synced, renamed over the old one, and the
// folder synced, so that a reader, or a crash, never sees half a file.
// Missing folders are made 0700. It returns the new file's info.
func write(path string, f *File) (os.FileInfo, error) {
	f.Version = version(f)
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the pins: %w", err)
	}
	if len(data) >= MaxFileBytes {
		// Never write what no colibri would read back: the servers pinned
		// already keep their pins; this record fails (config).
		return nil, fmt.Errorf("the pins would pass %d bytes (a server lists that much?); nothing was written", MaxFileBytes)
	}
	if err := writeAtomic(path, append(data, '\n'), 0o600); err != nil {
		return nil, err
	}
	return os.Lstat(path)
}

// writeAtomic replaces the file at path with data: a temporary file in the
// same folder (of mode), synced, renamed over the old one, and the folder
// synced. Missing folders are made 0700.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone after the rename; a leftover otherwise
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// sameFile reports whether a and b are the same version of the file: the
// same inode (every write renames a new one in), size and modification time.
func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
