package safefile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// An edit made between the read and the write is never lost: Replace
// checks that the file still holds what was read, and leaves it (and no
// temporary file) if not.
func TestReplaceKeepsAConcurrentEdit(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "external-mcp.json")
	read := []byte(`{"servers": {}}`)
	edited := []byte(`{"servers": {"edited": {"command": "/bin/true"}}}`)
	os.WriteFile(reg, edited, 0o644) // edited after it was read
	if err := Replace(reg, []byte(`{"servers": {"imported": {"command": "/bin/true"}}}`), 0o644, read); !errors.Is(err, ErrChanged) {
		t.Errorf("Replace over a changed file: %v", err)
	}
	if now, _ := os.ReadFile(reg); !bytes.Equal(now, edited) {
		t.Errorf("the edit was lost: %s", now)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files left: %v", entries)
	}
	// A file created meanwhile, where none was read, is kept too.
	fresh := filepath.Join(dir, "new.json")
	os.WriteFile(fresh, edited, 0o644)
	if err := Replace(fresh, read, 0o644, nil); !errors.Is(err, ErrChanged) {
		t.Errorf("Replace over a file created meanwhile: %v", err)
	}
	if err := Replace(reg, read, 0o640, edited); err != nil {
		t.Errorf("Replace over an unchanged file: %v", err)
	}
	if st, _ := os.Stat(reg); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
}

// The newest backup is FILE.bak, the older ones FILE.bak.1 … (newest
// first), at most MaxBackups in all, each with the mode given; a link at a
// backup's name is moved, never written through.
func TestBackupRotates(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.Symlink(filepath.Join(dir, "elsewhere"), p+".bak")
	for i := 0; i < 7; i++ {
		got, err := Backup(p, []byte{byte('a' + i)}, 0o640)
		if err != nil || got != p+".bak" {
			t.Fatalf("Backup #%d = %q, %v; want %q", i, got, err, p+".bak")
		}
	}
	for n, want := range []string{"g", "f", "e", "d", "c"} {
		name := p + ".bak"
		if n > 0 {
			name += "." + strconv.Itoa(n)
		}
		b, err := os.ReadFile(name)
		if err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", name, b, err, want)
		}
		if st, err := os.Lstat(name); err != nil || st.Mode().Perm() != 0o640 || !st.Mode().IsRegular() {
			t.Errorf("%s: %v, %v; want a regular file of mode 0640", name, st, err)
		}
	}
	if _, err := os.Lstat(p + ".bak.5"); err == nil {
		t.Error("more than MaxBackups backups kept")
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Error("a backup was written through a link")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".f.bak-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
