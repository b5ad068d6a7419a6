//go:build unix

package safefile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// poll is how often a held lock is tried again.
const poll = 10 * time.Millisecond

// Flock takes an exclusive flock(2) on f, trying again every 10 ms until
// deadline; onWait, when set, is called each time the lock is found held.
// On success, unlock releases the lock and closes f. On failure f is closed,
// and the error wraps ErrHeld when the deadline passed.
func Flock(f *os.File, deadline time.Time, onWait func()) (unlock func(), err error) {
	fd := int(f.Fd())
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(fd, syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
		}
		if onWait != nil {
			onWait()
		}
		if !time.Now().Before(deadline) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", f.Name(), ErrHeld)
		}
		time.Sleep(poll)
	}
}
