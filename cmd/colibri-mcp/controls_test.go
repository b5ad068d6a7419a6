package main

// Production controls end to end: the policy, the audit log, metrics and
// request ids (CONTRACT.md sections 9, 10 and 11).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeRaw writes a registry document as it is.
func writeRaw(t *testing.T, doc map[string]any) string {
	t.Helper()
	b, _ := json.MarshalIndent(doc, "", "  ")
	path := filepath.Join(t.TempDir(), "external-mcp.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// The command line is a caller too, the principal "cli": the policy hides
// and refuses for it as for a session, and a denied call starts nothing.
func TestCLIPolicy(t *testing.T) {
	pids := t.TempDir()
	reg := writeRaw(t, map[string]any{
		"policy": map[string]any{"callers": map[string]any{"cli": map[string]any{"tools": map[string]any{"deny": []string{"search"}}}}},
		"servers": map[string]any{"ann": map[string]any{
			"command": fakeBin, "args": []string{"annotated"}, "env": map[string]any{"FAKEMCP_PIDS": pids},
			"policy": map[string]any{"tools": map[string]any{"deny": []string{"delete_*"}}},
		}},
	})
	code, stdout, stderr := runCLI(t, nil, "--external-config", reg, "--external-call", "call", "ann", "delete_file")
	if code != 2 || stdout != "" || stderr != "colibri-mcp: denied: policy denies delete_file on ann for this caller\n" {
		t.Errorf("a denied call: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if started := dirEntries(t, pids); len(started) != 0 {
		t.Errorf("a denied call started %d processes", len(started))
	}
	code, stdout, stderr = runCLI(t, nil, "--external-config", reg, "list-tools", "ann")
	if code != 0 || !strings.Contains(stdout, "ann: 2 tools") || strings.Contains(stdout, "delete_file") || strings.Contains(stdout, "search") {
		t.Errorf("list-tools: exit %d\n%s%s", code, stdout, stderr)
	}
}
