package registry

import (
	"os"
	"sync"
	"time"
)

// Loader reads the registry file again on every request, so that an edit
// takes effect without a restart. It keeps the last parse and reuses it while
// the file's size and modification time are unchanged.
//
// Its lock guards only the remembered parse, never a read: a slow file
// cannot make one request wait behind another's read.
type Loader struct {
	Path string
	// Tried are the paths looked at to choose Path (registry.Default),
	// named when the file is missing.
	Tried []string

	load func(path string) (*Registry, error) // Load; replaced in tests

	mu    sync.Mutex
	size  int64
	mtime time.Time
	reg   *Registry
}

// Load returns the registry as the file is now.
func (l *Loader) Load() (*Registry, error) {
	st, err := os.Stat(l.Path)
	if err == nil {
		err = regular(st)
	}
	if err != nil {
		msg := readProblem(err)
		if IsMissing(err) {
			msg = missingProblem(l.Tried)
		}
		return nil, &Error{File: l.Path, Problems: []Problem{{Message: msg}}, Err: err}
	}
	l.mu.Lock()
	if l.reg != nil && st.Size() == l.size && st.ModTime().Equal(l.mtime) {
		reg := l.reg
		l.mu.Unlock()
		return reg, nil
	}
	l.mu.Unlock()

	load := l.load
	if load == nil {
		load = Load
	}
	reg, err := load(l.Path)

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.reg = nil
		return nil, err
	}
	// Remembered under the stat taken before the read: an edit made during
	// the read has a newer stat, so the next Load reads again.
	l.reg, l.size, l.mtime = reg, st.Size(), st.ModTime()
	return reg, nil
}
