package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The image's links are followed as the image would: an absolute target
// starts again at the image's root, ".." stops there, a loop fails; nothing
// resolves outside the folder.
func TestResolveInImageStaysInside(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "usr/local/bin"), 0o755)
	os.WriteFile(filepath.Join(root, "usr/local/bin/node"), nil, 0o755)
	os.Symlink("/usr/local/bin/node", filepath.Join(root, "usr/local/bin/abs"))
	os.Symlink("node", filepath.Join(root, "usr/local/bin/rel"))
	os.Symlink("../../../../../../etc/passwd", filepath.Join(root, "usr/local/bin/up"))
	os.Mkdir(filepath.Join(root, "etc"), 0o755)
	os.Symlink("/etc", filepath.Join(root, "hostetc")) // the build host's /etc, were it followed there
	os.Symlink("loop2", filepath.Join(root, "loop1"))
	os.Symlink("loop1", filepath.Join(root, "loop2"))
	for _, c := range []struct{ in, want string }{
		{"/usr/local/bin/node", "usr/local/bin/node"},
		{"/usr/local/bin/abs", "usr/local/bin/node"},
		{"/usr/local/bin/rel", "usr/local/bin/node"},
		{"/usr/local/bin/up", "etc/passwd"},
		{"/hostetc/passwd", "etc/passwd"}, // the image's own /etc
		{"/../../etc/hosts", "etc/hosts"},
		{"/usr/local/bin/missing/x", "usr/local/bin/missing/x"},
	} {
		got, err := resolveInImage(root, c.in)
		if err != nil || got != filepath.Join(root, c.want) {
			t.Errorf("resolveInImage(%s) = %s, %v; want %s", c.in, got, err, filepath.Join(root, c.want))
		}
	}
	if _, err := resolveInImage(root, "/loop1"); !errors.Is(err, errImageLoop) {
		t.Errorf("a loop: %v", err)
	}
	if _, err := resolveInImage(root, "relative"); err == nil {
		t.Error("a relative path resolved")
	}
}
