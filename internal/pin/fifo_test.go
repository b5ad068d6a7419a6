package pin_test

import (
	"syscall"
	"testing"
)

func mkfifo(t *testing.T, path string) {
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
}
