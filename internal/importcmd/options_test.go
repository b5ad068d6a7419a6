package importcmd

import (
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf"
)

// --from names an editor colibri reads, or the error says the closest;
// options that do not go together are refused, naming the flags.
func TestOptionsChecked(t *testing.T) {
	if f, err := ParseFrom("zed"); err != nil || f != editorconf.Format("zed") {
		t.Errorf("zed: %q, %v", f, err)
	}
	if _, err := ParseFrom("vscod"); err == nil || err.Error() != `--from "vscod": did you mean "vscode"?` {
		t.Errorf("vscod: %v", err)
	}
	if _, err := ParseFrom("emacs-with-everything"); err == nil || err.Error() != `--from "emacs-with-everything": want one of claude, cursor, vscode, zed, codex` {
		t.Errorf("an unknown editor: %v", err)
	}
	for _, tc := range []struct {
		o    Options
		says string
	}{
		{Options{File: "f"}, ""},
		{Options{From: "zed", Write: true, Apply: true, EnvFile: "e"}, ""},
		{Options{}, "give the editor's FILE, or --from EDITOR (claude, cursor, vscode, zed, codex) to read its usual file"},
		{Options{File: "f", Write: true, JSON: true}, "--json prints the entries and --write merges them into the registry: give one"},
		{Options{File: "f", Write: true, Apply: true}, "--apply rewrites the editor's file after --write, and needs --from EDITOR"},
		{Options{From: "zed", Apply: true}, "--apply rewrites the editor's file after --write, and needs --from EDITOR"},
		{Options{File: "f", EnvFile: "e"}, "--env-file writes the moved secrets with --write"},
	} {
		err := tc.o.Check()
		if (err == nil) != (tc.says == "") || err != nil && err.Error() != tc.says {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.says)
		}
	}
}
