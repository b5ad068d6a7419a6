//go:build unix

package pin_test

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/pin"
)

// A lock held by another process (a stuck `pins accept`, a second colibri
// stopped in a debugger) holds up only the writes that need it: a check of
// another server, whose list is as pinned, answers at once rather than
// wait behind the write for LockTimeout. The write itself fails config.
func TestHeldLockHoldsUpOnlyTheWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pins.json")
	store := pin.Open(path, pin.Options{LockTimeout: time.Minute})
	if _, err := store.Check("b", pin.NoCaps, base()); err != nil {
		t.Fatal(err)
	}
	// Another process's lock: flock(2) locks of two open files conflict
	// even within one process.
	f, err := os.OpenFile(path+".lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	var once sync.Once
	defer pin.SetLockWaits(func() { once.Do(func() { close(waiting) }) })()
	aDone := make(chan error, 1)
	go func() {
		_, err := store.Check("a", pin.NoCaps, base()) // a first list: a write
		aDone <- err
	}()
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the first list of a was not written under the lock")
	}
	bDone := make(chan error, 1)
	go func() {
		_, err := store.Check("b", pin.NoCaps, base()) // as pinned: no write
		bDone <- err
	}()
	select {
	case err := <-bDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a check that needs no write waited behind another's lock")
	}
	select {
	case err := <-aDone:
		t.Fatalf("a's write did not wait for the lock: %v", err)
	default:
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if err := <-aDone; err != nil {
		t.Fatalf("a once the lock was free: %v", err)
	}
	if got, err := store.Servers(); err != nil || len(got) != 2 {
		t.Errorf("servers %v, %v; want a and b", got, err)
	}
}
