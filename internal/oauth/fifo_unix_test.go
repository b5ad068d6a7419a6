//go:build unix

package oauth

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO at a token file's path, or at its lock's, is refused within 1 s
// with a message (open(2) of a FIFO with no writer blocked forever, and
// auth status, list-tools and call with it).
func TestHostileFIFOTokenFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "tokens.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo+".lock", 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { _, err := Load(fifo); done <- err }()
	go func() {
		unlock, err := lockFile(fifo+".lock", time.Now().Add(time.Second), nil)
		if err == nil {
			unlock()
		}
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "FIFO") {
				t.Errorf("a FIFO: %v", err)
			}
		case <-time.After(time.Second):
			t.Fatal("a FIFO at a token file's path did not answer within 1 s")
		}
	}
}
