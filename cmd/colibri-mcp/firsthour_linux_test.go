//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// call of a sandboxed server's tool that the kernel refused a path (the
// real server-filesystem, its EACCES in the tool's result) says on stderr
// that the sandbox is the likely reason and how to grant the path; the
// result is the hosted tool's, unchanged. The same refusal from an
// unconfined server gets no such hint (the first-hour trial: it read like
// the server's bug).
func TestCallSaysTheSandboxRefused(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	root := t.TempDir()
	allowed, other := filepath.Join(root, "allowed"), filepath.Join(root, "other")
	os.Mkdir(allowed, 0o755)
	os.Mkdir(other, 0o755)
	fs := filesystemPath(t)
	reg := writeRegistry(t, registryDoc{
		"files":      {"command": "node", "args": []string{fs, root}, "sandbox": map[string]any{"read": []string{allowed}, "net": false}},
		"files-free": {"command": "node", "args": []string{fs, root}},
	})
	args := `{"path":"` + filepath.Join(other, "nope.txt") + `"}`
	state := "XDG_STATE_HOME=" + t.TempDir()
	code, stdout, stderr := runHere(t, []string{state}, "--external-config", reg, "--external-call", "call", "files", "read_text_file", "--args", args)
	if code != exitFailed || !strings.Contains(stdout, "EACCES") {
		t.Fatalf("sandboxed: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "hint: the server runs in colibri's sandbox") || !strings.Contains(stderr, "--read PATH") {
		t.Errorf("sandboxed: no hint on stderr:\n%s", stderr)
	}
	// Unconfined, the file is missing (ENOENT), and there is nothing to say
	// of a sandbox.
	code, stdout, stderr = runHere(t, []string{state}, "--external-config", reg, "--external-call", "call", "files-free", "read_text_file", "--args", args)
	if code != exitFailed || strings.Contains(stderr, "sandbox") {
		t.Errorf("unconfined: exit %d\n%s%s", code, stdout, stderr)
	}
}
