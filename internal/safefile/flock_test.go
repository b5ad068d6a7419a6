//go:build unix

package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A second holder waits, is told so, and gives up at its deadline with
// ErrHeld; once the first lets go, it gets the lock.
func TestWaitIsBoundedAndExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := Flock(open(t, path), time.Now().Add(time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	waits := 0
	start := time.Now()
	_, err = Flock(open(t, path), time.Now().Add(50*time.Millisecond), func() { waits++ })
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("second Flock: %v, want ErrHeld", err)
	}
	if waits == 0 {
		t.Error("onWait was never called while the lock was held")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v", d)
	}
	unlock()
	unlock2, err := Flock(open(t, path), time.Now().Add(time.Second), nil)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	unlock2()
}
