package host

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/sandbox"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// The line about a sandboxed process's private TMPDIR that could not be
// removed is the process's own, as every line about it is: server=, pid=
// and, for a per-request process, request_id=, in that order.
func TestSandboxCleanupLineNamesTheProcessAndItsRequest(t *testing.T) {
	logs := &syncbuf.Buffer{}
	h := New(Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	t.Cleanup(h.Close)
	// A TMPDIR under a regular file: RemoveAll fails (not a directory),
	// whoever runs the test.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Skip("SKIPPING: no true(1)")
	}
	cmd := &exec.Cmd{Path: truePath, Args: sandbox.Argv(truePath, &sandbox.Plan{Tmp: filepath.Join(file, "tmp")}, []string{truePath})}
	srv := &registry.Server{Name: "boxed", Command: truePath}
	p, err := h.start(reqctx.WithID(t.Context(), "0123456789abcdef"), srv, cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done() // the cleanup runs before Done closes
	p.Stop(0)
	line := regexp.MustCompile(`level=WARN msg="cannot remove the sandbox's private TMPDIR" server=boxed pid=\d+ request_id=0123456789abcdef err=`)
	if !line.MatchString(logs.String()) {
		t.Errorf("the cleanup's line does not name the process and its request as its other lines do:\n%s", logs.String())
	}
}
