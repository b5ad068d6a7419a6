//go:build !unix

package safefile

import "time"

// LockDir is a no-op where flock(2) is missing: Replace's check still
// refuses most concurrent edits.
func LockDir(dir string, timeout time.Duration) (unlock func(), err error) {
	return func() {}, nil
}
