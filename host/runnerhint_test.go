package host

import (
	"errors"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// A package runner's start that timed out in a sandbox without network is
// not told to raise timeout_ms (more time fetches nothing); with the
// network it is, after the runner's hint (the first-hour trial).
func TestRunnerHintWithoutNetwork(t *testing.T) {
	off := false
	for _, tc := range []struct {
		sandbox   *registry.Sandbox
		wantRaise bool
	}{
		{nil, true},
		{&registry.Sandbox{Net: &off}, false},
	} {
		fe := &failure.Error{Kind: failure.KindTimeout, Phase: failure.PhaseInitialize, Err: errors.New("no answer"), Hint: "raise timeout_ms for this server, or COLIBRI_MCP_TIMEOUT"}
		runnerHint(&registry.Server{Name: "fs", Command: "npx", Args: []string{"-y", "pkg@1.0.0"}, Sandbox: tc.sandbox}, fe)
		if !strings.Contains(fe.Hint, "npx") || strings.Contains(fe.Hint, "raise timeout_ms") != tc.wantRaise {
			t.Errorf("sandbox %+v: hint %q, want raise timeout_ms %v", tc.sandbox, fe.Hint, tc.wantRaise)
		}
	}
}
