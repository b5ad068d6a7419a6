package envfile

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	got, err := Parse([]byte("# secrets\nA=1\n\nexport B='two words $x'\nC=\r\n"))
	if err != nil || !slices.Equal(got, []string{"A=1", "B=two words $x", "C="}) {
		t.Fatalf("Parse = %q, %v", got, err)
	}
	for _, bad := range []string{"A", "1A=x", "A=$(rm -rf /)", "A=\"x\"", "A='x'y'", "A=x;rm", "A=x&y", "A=~/k", "A=a|b"} {
		if _, err := Parse([]byte(bad + "\n")); err == nil || strings.Contains(err.Error(), "rm -rf") {
			t.Errorf("Parse(%q) = %v: want an error naming the line, never the value", bad, err)
		}
	}
}

// A file others may read is refused before a byte is read; a FIFO is
// refused at once (opfile).
func TestLoadRefusesReadableByOthers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "provider.env")
	os.WriteFile(p, []byte("A=1\n"), 0o644)
	if _, err := Load(p); !errors.Is(err, ErrReadable) {
		t.Errorf("Load of a 0644 file: %v", err)
	}
	os.Chmod(p, 0o640)
	if got, err := Load(p); err != nil || !slices.Equal(got, []string{"A=1"}) {
		t.Errorf("Load of a 0640 file = %q, %v", got, err)
	}
}

// Set writes lines that Parse (and sh) read back, replaces a name on its
// line, keeps the other lines, and refuses a file others may read.
func TestSet(t *testing.T) {
	p := filepath.Join(t.TempDir(), "provider.env")
	if err := Set(p, []string{"A", "B"}, map[string]string{"A": "x y", "B": "ghp_1"}); err != nil {
		t.Fatal(err)
	}
	if err := Set(p, []string{"B"}, map[string]string{"B": "ghp_2"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "A='x y'\nB=ghp_2\n" {
		t.Errorf("file = %q", b)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	if got, err := Load(p); err != nil || !slices.Equal(got, []string{"A=x y", "B=ghp_2"}) {
		t.Errorf("Load = %q, %v", got, err)
	}
	os.Chmod(p, 0o604)
	if err := Set(p, []string{"C"}, map[string]string{"C": "1"}); !errors.Is(err, ErrReadable) {
		t.Errorf("Set on a file others may read: %v", err)
	}
	if err := Set(p+"2", []string{"Q"}, map[string]string{"Q": "it's"}); err == nil {
		t.Error("Set of a value holding a quote: no error")
	}
}
