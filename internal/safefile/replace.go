// ReadWithMode, Backup and Replace replace a file a person also edits (the registry, an
// editor's MCP configuration, an env file) so that a reader sees the old
// content or the new, never a part, an edit made meanwhile is never lost,
// and the old content is kept beside it.
//
//	old, mode, err := ReadWithMode(path, 4<<20)      // nil, 0 when absent
//	backup, err := Backup(path, old, mode)    // FILE.bak, FILE.bak.1, …
//	err = Replace(path, next, mode, old)      // refused if path no longer holds old

package safefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// ErrChanged is a file that no longer holds what was read from it: someone
// edited it meanwhile, and writing would lose that edit.
var ErrChanged = errors.New("the file changed since it was read (is it being edited?): nothing written; run the command again")

// ReadWithMode reads a regular file of at most limit bytes, and its permissions; a
// file that does not exist is nil with no error.
func ReadWithMode(path string, limit int64) ([]byte, fs.FileMode, error) {
	f, err := Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, 0, fmt.Errorf("%s: %w: more than %d bytes", path, ErrTooLarge, limit)
	}
	return data, st.Mode().Perm(), nil
}

// MaxBackups is how many backups of a file Backup keeps: FILE.bak (the
// newest) and FILE.bak.1 … FILE.bak.4, older first to go.
const MaxBackups = 5

// Backup keeps data beside path as FILE.bak, the newest backup always:
// the older ones move to FILE.bak.1, FILE.bak.2, … (newest first), and the
// oldest beyond MaxBackups is removed. data is written (mode, synced) to a
// temporary file first, and the backups move only once it is whole; a
// link at a backup's name is moved or removed, never written through. It
// returns the name used, FILE.bak.
func Backup(path string, data []byte, mode fs.FileMode) (name string, err error) {
	name = path + ".bak"
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".bak-*")
	if err != nil {
		return name, err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return name, err
	}
	numbered := func(n int) string {
		if n == 0 {
			return name
		}
		return name + "." + strconv.Itoa(n)
	}
	if err := os.Remove(numbered(MaxBackups - 1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return name, fmt.Errorf("removing the oldest backup: %w", err)
	}
	for n := MaxBackups - 2; n >= 0; n-- {
		if err := os.Rename(numbered(n), numbered(n+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return name, fmt.Errorf("moving %s: %w", numbered(n), err)
		}
	}
	// Linking the whole temporary file in place fails if FILE.bak appeared
	// meanwhile (another writer): no backup is overwritten.
	if err := os.Link(f.Name(), name); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return name, err
		}
		// A file system without hard links: a rename, which the lock the
		// callers hold keeps from racing another writer of FILE.bak.
		return name, os.Rename(f.Name(), name)
	}
	os.Remove(f.Name())
	return name, nil
}

// Replace writes data to path through a temporary file in the same folder
// (given mode, synced), renamed over path only if path still holds old (nil:
// does not exist); otherwise it returns ErrChanged and path is untouched.
func Replace(path string, data []byte, mode fs.FileMode, old []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = stillHolds(path, old); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	// The rename itself lasts once the folder is synced.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// stillHolds checks that path still holds data (nil: that it does not
// exist).
func stillHolds(path string, data []byte) error {
	now, err := os.ReadFile(path)
	switch {
	case data == nil && errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	case err != nil || !bytes.Equal(now, data):
		return ErrChanged
	}
	return nil
}
