package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
)

// With stdout and stderr the same terminal (a shell), the progress line is
// cleared before the result is written: the result starts a clean line.
func TestProgressClearedBeforeResultOnATerminal(t *testing.T) {
	ptmx, tty := openPty(t)
	var screen syncbuf.Buffer
	go io.Copy(&screen, ptmx)
	reg := writeRegistry(t, nil)
	err := run(t.Context(), []string{"colibri-mcp", "--external-config", reg, "--external-call", "call", "demo", "slow", "--args", `{"steps":3,"interval_ms":1}`},
		strings.NewReader(""), tty, tty, append(os.Environ(), "E2E_SECRET=x"))
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(screen.String(), "done after 3 steps") {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal shows %q: no result", screen.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	s := screen.String()
	last := strings.LastIndex(s, "progress: ")
	result := strings.Index(s, "done after 3 steps")
	if last < 0 || !strings.Contains(s[last:result], "\r\x1b[K") {
		t.Errorf("the progress line was not cleared before the result: %q", s)
	}
}
