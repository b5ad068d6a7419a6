//go:build !unix

package flock

import (
	"os"
	"time"
)

// Wait takes no lock where the OS has no flock(2): unlock closes f.
func Wait(f *os.File, _ time.Time, _ func()) (unlock func(), err error) {
	return func() { f.Close() }, nil
}
