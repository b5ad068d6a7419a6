package launch

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// colibri uses colibri-sandbox where make install puts it
// (PREFIX/libexec/colibri-mcp, for PREFIX/bin/colibri-mcp) or beside its
// own binary (make build's bin/), when it is an executable file, and
// re-executes itself otherwise.
func TestLauncherFor(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("colibri-sandbox is Linux's")
	}
	prefix := t.TempDir()
	exe := filepath.Join(prefix, "bin", "colibri-mcp")
	libexec := filepath.Join(prefix, "libexec", "colibri-mcp", "colibri-sandbox")
	beside := filepath.Join(prefix, "bin", "colibri-sandbox")
	for _, d := range []string{filepath.Dir(exe), filepath.Dir(libexec)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := LauncherFor(exe); got != exe {
		t.Errorf("nothing installed: %s, want %s", got, exe)
	}
	if err := os.WriteFile(beside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := LauncherFor(exe); got != exe {
		t.Errorf("not executable: %s, want %s", got, exe)
	}
	os.Chmod(beside, 0o755)
	if got := LauncherFor(exe); got != beside {
		t.Errorf("beside: %s, want %s", got, beside)
	}
	if err := os.Mkdir(libexec, 0o755); err != nil { // a folder of that name does not count
		t.Fatal(err)
	}
	if got := LauncherFor(exe); got != beside {
		t.Errorf("a folder in libexec: %s, want %s", got, beside)
	}
	os.Remove(libexec)
	if err := os.WriteFile(libexec, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := LauncherFor(exe); got != libexec {
		t.Errorf("installed: %s, want %s", got, libexec)
	}
}
