// Package regfile writes registry files: one server added or removed, or a
// starter registry, atomically (FILE.bak kept, the new file put in place by a
// rename), under a lock that other colibri processes editing the same
// registry take, and keeping the person's text: a change splices the
// "servers" object, it never re-encodes the document, so every other
// entry's layout and key order survive (colibri-mcp init, add, remove,
// import --write).
//
//	backup, err := regfile.Edit(path, func(old []byte) ([]byte, error) {
//		return regfile.AddServer(old, "fs", json.RawMessage(`{"command": "/bin/fs"}`), false)
//	})
//
// Every document written passes registry.Parse first: an invalid registry is
// never written, nor edited (the person fixes it first).
package regfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/jsonsplice"
	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// ErrExists is a server name the registry holds already (add without
// --replace).
var ErrExists = errors.New("the registry has a server of that name already")

// UnknownServerError is a name the registry does not hold (remove).
type UnknownServerError struct {
	Name    string
	Closest string // a name the registry does hold, or ""
}

func (e *UnknownServerError) Error() string {
	if e.Closest != "" {
		return fmt.Sprintf("no server %q in the registry: did you mean %q?", e.Name, e.Closest)
	}
	return fmt.Sprintf("no server %q in the registry", e.Name)
}

// WritePath is where init, add and import --write put a registry when none
// is named: the per-user file for a user other than root, the system one
// for root.
func WritePath(root bool, getenv func(string) string) string {
	if !root {
		if u := registry.UserPath(getenv); u != "" {
			return u
		}
	}
	return registry.DefaultPath
}

// editLockTimeout bounds the wait for another process editing the
// registry.
const editLockTimeout = 10 * time.Second

// Edit changes the registry file at path: change gets the file as it is (nil
// when there is none) and returns the new document, or nil for no change.
// The file as it is must be a valid registry (an invalid one is refused, and
// left untouched: the person fixes it first), and so must the new document.
// The old file is kept as FILE.bak (FILE.bak.1, … when that exists); the new
// one replaces it by a rename, and only if nobody edited the file meanwhile
// (safefile.ErrChanged otherwise). A link at path keeps pointing at the
// file, which is replaced. It returns the backup's name ("" when none).
func Edit(path string, change func(old []byte) ([]byte, error)) (backup string, err error) {
	target, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(path); lerr == nil {
			return "", fmt.Errorf("the registry %s is a link to nothing: nothing written", path)
		}
		target, err = path, nil
	}
	if err != nil {
		return "", err
	}
	// Another add, remove or import on this registry waits for this one
	// (a folder that is not there yet holds no registry to lose).
	if _, err := os.Stat(filepath.Dir(target)); err == nil {
		unlock, err := safefile.LockDir(filepath.Dir(target), editLockTimeout)
		if err != nil {
			return "", err
		}
		defer unlock()
	}
	old, mode, err := safefile.ReadWithMode(target, registry.MaxFileSize)
	if err != nil {
		return "", err
	}
	if old == nil {
		mode = 0o644 // references to secrets, never secrets
	} else if _, err := registry.Parse(bytes.NewReader(old), path); err != nil {
		return "", fmt.Errorf("the registry is invalid, nothing written (fix it first): %w", err)
	}
	next, err := change(old)
	if err != nil || next == nil {
		return "", err
	}
	if _, err := registry.Parse(bytes.NewReader(next), path); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return "", err
	}
	if old != nil {
		if backup, err = safefile.Backup(target, old, mode); err != nil {
			if backup == "" { // no name was free
				return "", fmt.Errorf("keeping the old registry: %w: nothing written", err)
			}
			return "", fmt.Errorf("keeping the old registry as %s: %w: nothing written", backup, err)
		}
	}
	if err := safefile.Replace(target, next, mode, old); err != nil {
		if backup != "" {
			os.Remove(backup) // nothing was written: it keeps nothing
		}
		return "", err
	}
	return backup, nil
}

// AddServer returns doc (a registry document; nil or empty for none) with
// the server name set to entry, a JSON object. A name doc holds already is
// ErrExists unless replace; then only that entry's text changes.
func AddServer(doc []byte, name string, entry json.RawMessage, replace bool) ([]byte, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		doc = []byte("{}\n")
	}
	top, err := jsonsplice.Parse(doc, 0)
	if err != nil {
		return nil, err
	}
	si := top.Find("servers")
	if si < 0 {
		// No "servers" yet: one, holding the entry, after the last member.
		ind := top.MemberIndent(doc, "  ")
		body := []byte(fmt.Sprintf("\"servers\": {\n%s  %s: %s\n%s}", ind, jsonName(name), jsonsplice.Indent(entry, ind+"  "), ind))
		return top.Insert(doc, ind, body), nil
	}
	servers, err := jsonsplice.Parse(doc, top.Members[si].Value)
	if err != nil {
		return nil, fmt.Errorf(`reading the registry's "servers": %w`, err)
	}
	ind := servers.MemberIndent(doc, jsonsplice.LineIndent(doc, top.Members[si].Key)+"  ")
	if i := servers.Find(name); i >= 0 {
		if !replace {
			return nil, fmt.Errorf("%q: %w (--replace replaces it)", name, ErrExists)
		}
		m := servers.Members[i]
		return jsonsplice.Splice(doc, m.Value, m.End, jsonsplice.Indent(entry, ind)), nil
	}
	body := []byte(fmt.Sprintf("%s: %s", jsonName(name), jsonsplice.Indent(entry, ind)))
	return servers.Insert(doc, ind, body), nil
}

// jsonName is name as a JSON string (Go's %q is not JSON for every rune).
func jsonName(name string) string {
	b, _ := json.Marshal(name)
	return string(b)
}

// RemoveServer returns doc without the server name; the other entries' text
// is kept as it is. An unknown name is an *UnknownServerError.
func RemoveServer(doc []byte, name string) ([]byte, error) {
	top, err := jsonsplice.Parse(doc, 0)
	if err != nil {
		return nil, err
	}
	var servers jsonsplice.Object
	if si := top.Find("servers"); si >= 0 {
		if servers, err = jsonsplice.Parse(doc, top.Members[si].Value); err != nil {
			return nil, fmt.Errorf(`reading the registry's "servers": %w`, err)
		}
	}
	i := servers.Find(name)
	if i < 0 {
		var names []string
		for _, m := range servers.Members {
			names = append(names, m.Name)
		}
		return nil, &UnknownServerError{Name: name, Closest: suggest.Closest(name, names)}
	}
	return servers.Remove(doc, i), nil
}
