//go:build unix

package registry

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// answersWithin runs f and fails the test if it has not returned within d:
// a read that blocks must show up as a failure, not as a hung test.
func answersWithin[T any](t *testing.T, d time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(d):
		t.Fatalf("still blocked after %v", d)
		panic("unreachable")
	}
}

// A FIFO at the registry path, which no writer ever opens, is refused at
// once by Load and by a Loader: it never blocks a request.
func TestFIFORefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "external-mcp.json")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	for name, load := range map[string]func() error{
		"Load":   func() error { _, err := Load(path); return err },
		"Loader": func() error { _, err := (&Loader{Path: path}).Load(); return err },
	} {
		err := answersWithin(t, 2*time.Second, load)
		var re *Error
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "the registry path is not a regular file: it is a FIFO") {
			t.Errorf("%s: err = %v, want a registry error saying it is a FIFO", name, err)
		}
	}
	// A FIFO swapped in after the stat is safefile's to refuse
	// (TestOpenFollowing).
}

func TestNonRegularRefused(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxFileSize+1); err != nil { // sparse: costs nothing
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		dir:         "not a regular file: it is a directory",
		"/dev/null": "not a regular file: it is a device",
		big:         "the registry file is too large: 4194305 bytes, more than the limit of 4194304",
	} {
		for name, load := range map[string]func() error{
			"Load":   func() error { _, err := Load(path); return err },
			"Loader": func() error { _, err := (&Loader{Path: path}).Load(); return err },
		} {
			if err := load(); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s(%s) = %v, want it to say %q", name, path, err, want)
			}
		}
	}
}

// Concurrent Loads are not serialized behind a slow read: while one Load is
// stuck in its read, another completes.
func TestLoaderNeverLocksAcrossIO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	os.WriteFile(path, []byte(`{"servers":{"a":{"command":"x"}}}`), 0o644)
	stuck, release := make(chan struct{}), make(chan struct{})
	calls := 0
	l := &Loader{Path: path}
	l.load = func(p string) (*Registry, error) {
		if calls++; calls == 1 {
			close(stuck)
			<-release // the first read never ends until the test says so
		}
		return Load(p)
	}
	first := make(chan error, 1)
	go func() { _, err := l.Load(); first <- err }()
	<-stuck
	reg := answersWithin(t, 2*time.Second, func() *Registry {
		reg, err := l.Load()
		if err != nil {
			t.Error(err)
		}
		return reg
	})
	if reg == nil || len(reg.Servers) != 1 {
		t.Errorf("second Load = %v", reg)
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first Load: %v", err)
	}
}
