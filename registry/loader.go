package registry

import (
	"os"
	"sync"
	"time"
)

// Loader reads the registry file again on every request, so that an edit
// takes effect without a restart. It keeps the last parse and reuses it while
// the file's size and modification time are unchanged.
type Loader struct {
	Path string

	mu    sync.Mutex
	size  int64
	mtime time.Time
	reg   *Registry
}

// Load returns the registry as the file is now.
func (l *Loader) Load() (*Registry, error) {
	st, err := os.Stat(l.Path)
	if err != nil {
		return nil, &Error{File: l.Path, Problems: []Problem{{Message: readProblem(err)}}, Err: err}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reg != nil && st.Size() == l.size && st.ModTime().Equal(l.mtime) {
		return l.reg, nil
	}
	reg, err := Load(l.Path)
	if err != nil {
		l.reg = nil
		return nil, err
	}
	l.reg, l.size, l.mtime = reg, st.Size(), st.ModTime()
	return reg, nil
}
