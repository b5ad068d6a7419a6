package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// check --probe --capabilities on a staging machine pins, beside what any
// caller is offered, the tools server-everything offers only to a caller
// that samples, lists roots or elicits; the lock exported after it holds
// each marked with the capability it needs (docs/security.md, locked pins).
func TestCheckProbeCapabilitiesPinsForTheLock(t *testing.T) {
	t.Parallel()
	reg := writeRegistryDoc(t, map[string]any{"servers": everything(t)})
	pins := "COLIBRI_MCP_PIN_FILE=" + filepath.Join(t.TempDir(), "pins.json")
	code, out, stderr := runCLI(t, []string{pins}, "--external-config", reg, "check", "--probe", "--capabilities", "sampling, roots,elicitation,sampling")
	if code != 0 || !strings.Contains(out, "tools listed to a caller offering elicitation,roots,sampling, pinned for it") {
		t.Fatalf("check --probe --capabilities: exit %d\n%s%s", code, out, stderr)
	}
	code, lock, stderr := runCLI(t, []string{pins}, "--external-config", reg, "pins", "export")
	if code != 0 {
		t.Fatalf("pins export: %d %s", code, stderr)
	}
	var doc struct {
		Servers map[string]struct {
			Tools map[string][]struct {
				Capabilities []string `json:"capabilities"`
			} `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(lock), &doc); err != nil {
		t.Fatalf("the lock: %v\n%s", err, lock)
	}
	tools := doc.Servers["everything"].Tools
	needs := func(tool string) []string {
		if defs := tools[tool]; len(defs) == 1 {
			return defs[0].Capabilities
		}
		return []string{"(not in the lock)"}
	}
	for tool, want := range map[string][]string{
		"echo":                     {},
		"trigger-sampling-request": {"sampling"},
		"get-roots-list":           {"roots"},
	} {
		if got := needs(tool); !slices.Equal(got, want) {
			t.Errorf("the lock's %s needs %v, want %v", tool, got, want)
		}
	}

	// JSON says which set was probed, and how many tools it showed.
	code, out, _ = runCLI(t, []string{pins}, "--external-config", reg, "check", "--probe", "--capabilities", "sampling", "--json")
	var res struct {
		Servers []struct {
			Capabilities string `json:"capabilities"`
			Tools        *int   `json:"tools"`
			ToolsWith    *int   `json:"tools_with_capabilities"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || len(res.Servers) != 1 || res.Servers[0].Capabilities != "sampling" ||
		res.Servers[0].ToolsWith == nil || res.Servers[0].Tools == nil || *res.Servers[0].ToolsWith <= *res.Servers[0].Tools {
		t.Errorf("check --probe --capabilities sampling --json: exit %d, %v\n%s", code, err, out)
	}
}

// --capabilities names only what colibri can offer, and only with --probe.
func TestCheckCapabilitiesUsage(t *testing.T) {
	t.Parallel()
	reg := writeRegistryDoc(t, map[string]any{"servers": map[string]any{}})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--probe", "--capabilities", "sampling,tasks"}, `"tasks" is not a client capability`},
		{[]string{"check", "--capabilities", "sampling"}, "give --probe too"},
	} {
		code, _, stderr := runCLI(t, nil, append([]string{"--external-config", reg}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
