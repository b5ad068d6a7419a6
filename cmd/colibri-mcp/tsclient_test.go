package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// A client from another implementation: the official TypeScript SDK
// (testdata/peers/ts-client.mjs) drives the built colibri-mcp over stdio,
// Streamable HTTP and HTTP+SSE: list, call, progress, cancel.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()      // a long test of its own process: it runs beside the others (docs/testing.md)
	everythingPath(t) // node and the peers are installed (or, outside CI, a skip)
	script, _ := filepath.Abs("../../testdata/peers/ts-client.mjs")
	run := func(t *testing.T, args ...string) {
		t.Helper()
		cmd := exec.Command("node", append([]string{script}, args...)...)
		cmd.Dir = filepath.Dir(script)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ts-client %s: %v\n%s%s", args[0], err, out, stderr.String())
		}
		var summary struct {
			Tools     []string
			Echo      string
			Progress  []string
			Cancelled bool
		}
		if err := json.Unmarshal(out, &summary); err != nil {
			t.Fatalf("ts-client output %q: %v", out, err)
		}
		if len(summary.Tools) != 3 || summary.Echo != "Echo: from typescript" || len(summary.Progress) == 0 || !summary.Cancelled {
			t.Errorf("ts-client %s: %s", args[0], out)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		run(t, "stdio", colibriBin, writeRegistry(t, nil))
	})
	t.Run("http", func(t *testing.T) {
		c := startHTTP(t, "127.0.0.1:0")
		run(t, "http", c.url)
		// The aborted call's hosted process is gone.
		for deadline := time.Now().Add(6 * time.Second); len(proctable.Children(c.cmd.Process.Pid)) > 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("hosted processes left after the TypeScript client's cancel: %v", proctable.Children(c.cmd.Process.Pid))
			}
		}
	})
	// The 2024-11-05 HTTP+SSE transport at /sse, for clients that have not
	// moved to Streamable HTTP.
	t.Run("sse", func(t *testing.T) {
		c := startHTTP(t, "127.0.0.1:0")
		run(t, "sse", strings.TrimSuffix(c.url, "/mcp")+"/sse")
	})
}
