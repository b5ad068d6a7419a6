//go:build unix

package safefile

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// LockDir takes an exclusive flock(2) on the folder dir, which every
// writer of a file in it through this package's callers takes around its
// read, change and replace: two colibri processes that edit one registry
// at once then run one after the other, and neither's change is lost
// between Replace's check and its rename. No lock file is left behind. It
// waits at most timeout, polling, so that a stuck holder cannot hang this
// process.
func LockDir(dir string, timeout time.Duration) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	unlock, err = Flock(f, time.Now().Add(timeout), nil)
	if errors.Is(err, ErrHeld) {
		return nil, fmt.Errorf("another process has been editing a file in %s for more than %s", dir, timeout)
	}
	return unlock, err
}
