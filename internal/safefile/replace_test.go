package safefile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
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

// Backups never overwrite one another.
func TestBackupNumbers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	for i, want := range []string{p + ".bak", p + ".bak.1"} {
		got, err := Backup(p, []byte{byte('a' + i)}, 0o600)
		if err != nil || got != want {
			t.Fatalf("Backup #%d = %q, %v; want %q", i, got, err, want)
		}
	}
	if b, _ := os.ReadFile(p + ".bak"); string(b) != "a" {
		t.Errorf(".bak = %q, want the first", b)
	}
}
