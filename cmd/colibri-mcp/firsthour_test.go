package main

import (
	"fmt"
	"strings"
	"testing"
)

// Tests of what the first-hour trials found (docs/testing.md, "First-hour
// trials"): each is what a new user read that was wrong or missing.

// serve --only with a name the registry lacks, and nothing close: the
// names it lists never read as the whole registry when they are not.
func TestOnlyUnknownNamesAllOrSaysMore(t *testing.T) {
	servers := registryDoc{}
	for i := range 12 {
		servers[fmt.Sprintf("server%02d", i)] = map[string]any{"command": "/bin/true"}
	}
	reg := writeOnly(t, servers)
	code, _, stderr := runHere(t, nil, "--external-config", reg, "serve", "--only", "zzzzzzzzzz")
	if code != exitUsage || !strings.Contains(stderr, "server09 and 2 more: colibri-mcp servers lists them") {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
}
