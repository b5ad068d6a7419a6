//go:build unix

package oauth

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
)

// lockFile takes an exclusive flock(2) on path (created 0600 if missing),
// so that two colibri processes never refresh the same tokens at once: with
// rotation the second would send a spent refresh token. It polls until
// deadline rather than blocking, so that a stuck process holding the lock
// cannot hang this one; onWait, if set, is called once when the lock is
// found taken. unlock releases it.
func lockFile(path string, deadline time.Time, onWait func()) (unlock func(), err error) {
	f, err := safefile.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking the token file: %w", err)
	}
	if onWait != nil {
		once := onWait
		onWait = func() { // told once, however long it waits
			if once != nil {
				once()
				once = nil
			}
		}
	}
	unlock, err = safefile.Flock(f, deadline, onWait)
	switch {
	case errors.Is(err, safefile.ErrHeld):
		return nil, fmt.Errorf("another process has been refreshing the tokens in %s for too long (it holds %s)", path[:len(path)-len(".lock")], path)
	case err != nil:
		return nil, fmt.Errorf("locking the token file: %w", err)
	}
	return unlock, nil
}
