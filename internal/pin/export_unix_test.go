//go:build unix

package pin

// SetLockWaits sets lockWaits for a test, and returns what undoes it.
func SetLockWaits(f func()) func() {
	lockWaits = f
	return func() { lockWaits = nil }
}
