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

	"github.com/colibri-mcp/colibri-mcp/internal/opfile"
)

// Version is the format of the pin file this colibri reads and writes. A
// file of a later version is refused, never read as far as it goes: what
// it holds may mean more than this colibri knows.
const Version = 1

// MaxFileBytes bounds the pin file colibri reads: far more than the pins of
// many servers, each of whose lists is itself bounded (COLIBRI_MCP_MAX_RESULT_BYTES).
const MaxFileBytes = 64 << 20

// File is the pin file: by server, by capability set (Caps), the pinned
// definitions and the changes seen since.
type File struct {
	Version int                        `json:"version"`
	Servers map[string]map[string]*Set `json:"servers"`
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
func readFile(path string) (*File, os.FileInfo, error) {
	data, err := opfile.ReadFile(path, MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{Version: Version, Servers: map[string]map[string]*Set{}}, nil, nil
	}
	if err != nil {
		return nil, nil, &ConfigError{Path: path, Err: fmt.Errorf("cannot be read (colibri will not treat it as empty, which would trust every tool again): %w", err)}
	}
	st, err := os.Lstat(path)
	if err != nil {
		return nil, nil, &ConfigError{Path: path, Err: err}
	}
	if err := trusted(st); err != nil {
		return nil, nil, &ConfigError{Path: path, Err: err}
	}
	f, err := parse(data)
	if err != nil {
		return nil, nil, &ConfigError{Path: path, Err: err}
	}
	return f, st, nil
}

// parse decodes and checks a pin file's content.
func parse(data []byte) (*File, error) {
	var head struct {
		Version *int `json:"version"`
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
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
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
			if set.Tools == nil {
				set.Tools = map[string]*Entry{}
			}
			for _, m := range []map[string]*Entry{set.Tools, set.Pending} {
				for name, e := range m {
					if e == nil || len(e.Digest) != len("sha256:")+64 || e.Digest[:7] != "sha256:" {
						return nil, fmt.Errorf("server %q, tool %q: a digest that is not sha256:<64 hex digits>", server, name)
					}
				}
			}
		}
	}
	f.Version = Version
	return &f, nil
}

// write replaces the file at path with f, atomically: a temporary file in
// the same folder (mode 0600), synced, renamed over the old one, and the
// folder synced, so that a reader, or a crash, never sees half a file.
// Missing folders are made 0700. It returns the new file's info.
func write(path string, f *File) (os.FileInfo, error) {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the pins: %w", err)
	}
	if len(data) >= MaxFileBytes {
		// Never write what no colibri would read back: the servers pinned
		// already keep their pins; this record fails (config).
		return nil, fmt.Errorf("the pins would pass %d bytes (a server lists that much?); nothing was written", MaxFileBytes)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name()) // gone after the rename; a leftover otherwise
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return os.Lstat(path)
}

// sameFile reports whether a and b are the same version of the file: the
// same inode (every write renames a new one in), size and modification time.
func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
