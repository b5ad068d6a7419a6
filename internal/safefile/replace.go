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

// Backup keeps data beside path: as FILE.bak, or, when that exists already
// (kept by an earlier run: the file as it was before the first), as
// FILE.bak.1, FILE.bak.2, …, the first name free. No backup is overwritten.
// It returns the name used.
func Backup(path string, data []byte, mode fs.FileMode) (string, error) {
	for n := 0; n < 1000; n++ {
		name := path + ".bak"
		if n > 0 {
			name += "." + strconv.Itoa(n)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return name, err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Chmod(mode) // O_CREATE's mode is less the umask
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
		}
		return name, err
	}
	return "", fmt.Errorf("%s.bak … %s.bak.999 all exist: remove old backups", path, path)
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
