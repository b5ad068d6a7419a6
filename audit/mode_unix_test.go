//go:build unix

package audit

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The file is created 0600 whatever the umask; one that exists with a
// wider mode is left as the operator made it, with a warning (at open and
// at each reopen) that says which file and which mode.
func TestModeUnderAPermissiveUmaskAndAWiderFile(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("created with umask 0: mode %04o, want 0600", st.Mode().Perm())
	}
	if w.Warning() != "" {
		t.Errorf("a 0600 file: warning %q", w.Warning())
	}

	wide := filepath.Join(dir, "wide.log")
	os.WriteFile(wide, []byte("{}\n"), 0o644)
	w2, err := Open(wide, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if got := w2.Warning(); !strings.Contains(got, wide) || !strings.Contains(got, "mode 0644") {
		t.Errorf("a 0644 file: warning %q", got)
	}
	if st, _ := os.Stat(wide); st.Mode().Perm() != 0o644 {
		t.Errorf("the operator's mode was changed to %04o", st.Mode().Perm())
	}
	// newsyslog made a new file, 0640 by mistake: the reopen says so; a
	// fixed one clears the warning.
	os.Rename(path, path+".0")
	os.WriteFile(path, nil, 0o640)
	if err := w.Reopen(); err != nil || !strings.Contains(w.Warning(), "mode 0640") {
		t.Errorf("reopen onto 0640: %v, warning %q", err, w.Warning())
	}
	os.Chmod(path, 0o600)
	if err := w.Reopen(); err != nil || w.Warning() != "" {
		t.Errorf("reopen onto 0600: %v, warning %q", err, w.Warning())
	}
}

// A SIGHUP that races the shutdown does not bring a closed log back.
func TestReopenAfterCloseStaysClosed(t *testing.T) {
	w, err := Open(filepath.Join(t.TempDir(), "audit.log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := w.Reopen(); err == nil {
		t.Error("a closed log reopened")
	}
	if err := w.Write(record("x")); err == nil {
		t.Error("a closed log took a record after a reopen")
	}
}

// A FIFO given as the log or the key file is refused at once: open(2)
// would otherwise wait for its other end, and colibri would hang at start.
func TestAFIFOIsRefusedNotWaitedOn(t *testing.T) {
	dir := t.TempDir()
	logFIFO, keyFIFO := filepath.Join(dir, "log"), filepath.Join(dir, "key")
	for _, p := range []string{logFIFO, keyFIFO} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 2)
	go func() {
		w, err := Open(logFIFO, nil)
		if err == nil {
			w.Close()
		}
		done <- err
	}()
	go func() { _, _, err := LoadKey(keyFIFO); done <- err }()
	for range 2 {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "is not a regular file") && !strings.Contains(err.Error(), ": not a regular file") {
				t.Errorf("a FIFO: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("opening a FIFO hangs")
		}
	}
}

// A symbolic link at the audit log's path is refused, at the start and on
// a SIGHUP's reopen: it could aim the log's appends at any file colibri may
// write. A FIFO at the log's or the key file's path is refused at once.
func TestHostileAuditPathsRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	os.WriteFile(target, []byte("precious\n"), 0o600)
	link := filepath.Join(dir, "audit.log")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if w, err := Open(link, nil); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a symlink at the log's path: %v", err)
		if w != nil {
			w.Close()
		}
	}
	real := filepath.Join(dir, "real.log")
	w, err := Open(real, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	os.Remove(real)
	os.Symlink(target, real)
	if err := w.Reopen(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("reopen onto a symlink: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { _, err := Open(fifo, nil); done <- err }()
	go func() { _, _, err := LoadKey(fifo); done <- err }()
	for range 2 {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "FIFO") {
				t.Errorf("a FIFO: %v", err)
			}
		case <-time.After(time.Second):
			t.Fatal("opening a FIFO did not answer within 1 s")
		}
	}
}
