// Package safefile is how colibri touches the files people name and edit,
// so that a hostile or mistaken path cannot hang it, redirect it or lose an
// edit:
//
//   - Open, OpenFile and ReadFile open the files an operator names (token
//     files, OAuth token files, the audit log, env files, the pin file, the
//     registry) so that a path that is not a regular file is refused at once
//     with a message, never waited on (open.go);
//   - Flock takes an exclusive flock(2) without ever blocking in the kernel,
//     for the registry's editors, the pin file and the OAuth token files
//     (flock.go);
//   - ReadWithMode, Backup and Replace replace a file a person also edits
//     (the registry, an editor's MCP configuration, an env file) so that a
//     reader sees the old content or the new, never a part, and an edit made
//     meanwhile is never lost (replace.go).
//
// open(2) of a FIFO blocks until its other end is opened, a device can have
// effects of its own, and a symbolic link at the path may point anywhere the
// process can reach. Every open here is non-blocking and does not follow a
// link at the last component; what is read is what fstat checked on the open
// descriptor.
//
//	data, err := safefile.ReadFile(path, 1<<20)
//	if err != nil { return fmt.Errorf("reading the token file: %w", err) }
package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotRegular is wrapped by every refusal of a path that is not a regular
// file (a FIFO, a device, a directory, a symbolic link).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped when a file holds more than the caller's limit.
var ErrTooLarge = errors.New("file too large")

// Open opens path read-only if it is a regular file and not a symbolic link.
func Open(path string) (*os.File, error) {
	return OpenFile(path, os.O_RDONLY, 0)
}

// OpenFile is os.OpenFile with O_NONBLOCK and O_NOFOLLOW added, keeping the
// descriptor only if it is a regular file. O_NONBLOCK is cleared again on a
// regular file's descriptor by the kernel's own rules (it has no effect there),
// so reads and writes behave as usual.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|extraFlags, perm)
	if err != nil {
		return nil, explain(path, err)
	}
	st, err := f.Stat()
	if err == nil {
		err = Regular(st)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// OpenFollowing opens path read-only if it is, or links to, a regular file:
// for the files a person keeps where they like and may link into place (the
// registry, an editor's configuration), where Open would refuse the link. It
// asks stat first, so that a device is never opened (opening one can have
// effects of its own: a terminal may become the controlling one), then opens
// without blocking and keeps the descriptor only if fstat finds it regular,
// so that what is read is what was checked. A failed stat or open is the
// *os.PathError; a refusal wraps ErrNotRegular and leaves the path for the
// caller to name.
func OpenFollowing(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err == nil {
		err = Regular(st)
	}
	if err != nil {
		return nil, err
	}
	return openFollowingChecked(path)
}

// openFollowingChecked is OpenFollowing past its stat: what a path swapped
// after the stat meets.
func openFollowingChecked(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|followFlags, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = Regular(st)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads a whole regular file of at most limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", path, ErrTooLarge, limit)
	}
	return data, nil
}

// Regular says why st is not a regular file, or nil when it is one.
func Regular(st os.FileInfo) error {
	m := st.Mode()
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		return fmt.Errorf("%w: it is a directory", ErrNotRegular)
	case m&os.ModeNamedPipe != 0:
		return fmt.Errorf("%w: it is a FIFO, which colibri never opens (it could block)", ErrNotRegular)
	case m&os.ModeSymlink != 0:
		return fmt.Errorf("%w: it is a symbolic link, which colibri does not follow here", ErrNotRegular)
	case m&os.ModeDevice != 0:
		return fmt.Errorf("%w: it is a device", ErrNotRegular)
	case m&os.ModeSocket != 0:
		return fmt.Errorf("%w: it is a socket", ErrNotRegular)
	default:
		return fmt.Errorf("%w: its mode is %s", ErrNotRegular, m.Type())
	}
}

// explain turns the errors of a refused O_NOFOLLOW or O_NONBLOCK open into
// ones that say what the path is, where Lstat can tell.
func explain(path string, err error) error {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		return err
	}
	if st, lerr := os.Lstat(path); lerr == nil {
		if rerr := Regular(st); rerr != nil {
			return fmt.Errorf("%s: %w", path, rerr)
		}
	}
	return err
}
