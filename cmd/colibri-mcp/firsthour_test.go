package main

import (
	"fmt"
	"path/filepath"
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

// init's editor entries leave the call gate off, and init says so under
// them, with how to turn it on: docs/editors.md's entries all carry it, and
// a model that cannot call what it lists was a mystery.
func TestInitSaysTheGateIsOff(t *testing.T) {
	home := t.TempDir()
	code, stdout, stderr := asUser(t, home, "init")
	if code != 0 || !strings.Contains(stdout, "these entries leave the call gate off") || !strings.Contains(stdout, `add "--external-call" to "args"`) {
		t.Fatalf("init: exit %d\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, `"--external-call"`+",") || strings.Contains(stdout, `  "--external-call"`) {
		t.Errorf("init's entries turn the gate on unasked:\n%s", stdout)
	}
}

// import --write --env-file F without --apply: the entry to paste loads F
// (else the secrets moved there reach nothing), and import says how the
// command line loads it too (check and list-tools without it failed "not
// set" on the first-hour trial, while the message spoke of serve only).
func TestImportEnvFileSaysWhoLoadsIt(t *testing.T) {
	dir := t.TempDir()
	reg, envFile := filepath.Join(dir, "external-mcp.json"), filepath.Join(dir, "provider.env")
	code, stdout, stderr := runHere(t, []string{"HOME=/home/me"}, "--external-config", reg, "import", sampleFile(t, "claude_desktop_config.json"), "--write", "--env-file", envFile)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"the colibri entry below loads it; on the command line give --env-file " + envFile + ", or export COLIBRI_MCP_ENV_FILE=" + envFile,
		"\"--env-file\",\n        \"" + envFile + "\""} {
		if !strings.Contains(stdout, want) {
			t.Errorf("import does not say %q:\n%s", want, stdout)
		}
	}
	// It said "--apply rewrites FILE" already, naming the file: not again
	// as init's "--from EDITOR".
	if strings.Contains(stdout, "--from EDITOR") {
		t.Errorf("import repeats init's line:\n%s", stdout)
	}
}
