package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFileRegular(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(p, 5)
	if err != nil || string(got) != "hello" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	if _, err := ReadFile(p, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: %v, want ErrTooLarge", err)
	}
}

// A FIFO with no writer must be refused at once, not block the open.
func TestFIFORefusedAtOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(p, 10); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "FIFO") {
			t.Fatalf("err = %v, want a FIFO refusal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFile blocked on a FIFO")
	}
}

func TestSymlinkAndDirectoryRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(link, 100); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("symlink: %v, want a refusal naming the link", err)
	}
	if _, err := ReadFile(dir, 100); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("directory: %v, want ErrNotRegular", err)
	}
	if _, err := ReadFile("/dev/null", 100); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "device") {
		t.Fatalf("/dev/null: %v, want a device refusal", err)
	}
}

func TestOpenFileAppendCreates(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	f, err := OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("line\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("created %v, %v; want mode 0600", st, err)
	}
}

// OpenFollowing follows a link to a regular file, and refuses at once,
// without blocking, a FIFO at the path, one a link names, and one swapped in
// after its stat (the descriptor's own fstat refuses it); a device is never
// opened.
func TestOpenFollowing(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFollowing(link)
	if err != nil {
		t.Fatalf("a link to a regular file: %v", err)
	}
	f.Close()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	fifoLink := filepath.Join(dir, "fifo-link")
	if err := os.Symlink(fifo, fifoLink); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func() (*os.File, error){
		"a FIFO":                  func() (*os.File, error) { return OpenFollowing(fifo) },
		"a link to a FIFO":        func() (*os.File, error) { return OpenFollowing(fifoLink) },
		"a FIFO after their stat": func() (*os.File, error) { return openFollowingChecked(fifo) },
		"a device":                func() (*os.File, error) { return OpenFollowing("/dev/null") },
		"a directory":             func() (*os.File, error) { return OpenFollowing(dir) },
	} {
		done := make(chan error, 1)
		go func() {
			f, err := open()
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: %v, want ErrNotRegular", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: OpenFollowing blocked", name)
		}
	}
}
