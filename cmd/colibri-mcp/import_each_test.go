package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/importcmd"
)

// A VS Code file whose servers carry a sandbox block, imported with
// --write --apply --each: the registry gets colibri's sandbox (write, unix,
// no network for an allowlist this registry cannot hold as a list), what
// has no counterpart is named, and each imported server's own entry in the
// editor's file now runs colibri serve --only NAME, every other byte kept;
// a name the registry held with another definition is left as it was. The
// output says where the call gate stands and how to turn it on.
func TestImportVSCodeSandboxApplyEach(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sandbox is Linux's")
	}
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	vscode := filepath.Join(proj, ".vscode", "mcp.json")
	os.MkdirAll(filepath.Dir(vscode), 0o755)
	editor := `{
  // the team's servers
  "servers": {
    "playwright": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@playwright/mcp@0.0.41"],
      "sandboxEnabled": true,
      "sandbox": {
        "filesystem": {"allowWrite": ["${workspaceFolder}/out"], "denyRead": ["~/.ssh"]},
        "network": {"allowedDomains": ["api.example.com"], "allowUnixSockets": ["${userHome}/pw.sock"]}
      }
    },
    "notes": {"type": "stdio", "command": "/usr/bin/notes-mcp"},
    "taken": {"type": "stdio", "command": "/usr/bin/other-mcp"}
  },
  "inputs": []
}
`
	os.WriteFile(vscode, []byte(editor), 0o644)
	os.MkdirAll(filepath.Join(proj, "out"), 0o755)
	os.WriteFile(filepath.Join(home, "pw.sock"), nil, 0o600)
	reg := filepath.Join(home, "cfg", "colibri", "external-mcp.json")
	os.MkdirAll(filepath.Dir(reg), 0o755)
	os.WriteFile(reg, []byte(`{"servers": {"taken": {"command": "/usr/bin/taken-elsewhere"}, "notes": {"command": "/usr/bin/notes-mcp"}}}`+"\n"), 0o644)

	// --each without --apply is a usage error.
	if code, _, stderr := asUser(t, home, "import", vscode, "--from", "vscode", "--write", "--each"); code != 2 || !strings.Contains(stderr, "--each") {
		t.Fatalf("--each without --apply: exit %d, %q", code, stderr)
	}

	code, stdout, stderr := asUser(t, home, "import", vscode, "--from", "vscode", "--write", "--apply", "--each")
	if code != 0 {
		t.Fatalf("import --apply --each: exit %d\n%s%s", code, stdout, stderr)
	}
	r := mustRead(t, reg)
	// This colibri's registry takes a list of destinations: allowedDomains
	// becomes net.
	for _, want := range []string{`"sandbox": {`, `"` + proj + `/out"`, `"api.example.com"`, `"` + home + `/pw.sock"`} {
		if !strings.Contains(r, want) {
			t.Errorf("registry does not hold %s:\n%s", want, r)
		}
	}
	for _, want := range []string{"sandbox.filesystem.denyRead not carried over",
		"left as they were in " + vscode + ": taken", "the call gate is off", "--external-call"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output does not say %q:\n%s", want, stdout)
		}
	}
	got := mustRead(t, vscode)
	self := strings.ReplaceAll(selfForTest(t), `\`, `\\`)
	for _, want := range []string{"// the team's servers", `"inputs": []`, `"/usr/bin/other-mcp"`,
		`"command": "` + self + `"`, `"serve",`, `"--only",`, `"playwright"`, `"notes"`, `"--external-config",`} {
		if !strings.Contains(got, want) {
			t.Errorf("editor's file does not hold %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "@playwright/mcp") || strings.Contains(got, `"/usr/bin/notes-mcp"`) {
		t.Errorf("an imported server still runs itself:\n%s", got)
	}
	if mustRead(t, vscode+".bak") != editor {
		t.Error("the editor's file was not kept as FILE.bak")
	}
}

// The gate sentence: an --apply that writes --external-call says the gate
// is on.
func TestImportApplySaysGateOn(t *testing.T) {
	home := t.TempDir()
	claude := filepath.Join(home, "cfg", "Claude", "claude_desktop_config.json")
	os.MkdirAll(filepath.Dir(claude), 0o755)
	os.WriteFile(claude, []byte(`{"mcpServers": {"notes": {"command": "/usr/bin/notes-mcp"}}}`), 0o644)
	code, stdout, stderr := asUser(t, home, "--external-call", "import", "--from", "claude", "--write", "--apply")
	if code != 0 || !strings.Contains(stdout, "the call gate is on") {
		t.Fatalf("import --apply --external-call: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(mustRead(t, claude), `"--external-call"`) {
		t.Errorf("the colibri entry does not turn the gate on:\n%s", mustRead(t, claude))
	}
}

// Claude Code's oauth keys become colibri's oauth, the others named.
func TestImportClaudeCodeOAuth(t *testing.T) {
	home := t.TempDir()
	mcp := filepath.Join(home, "repo", ".mcp.json")
	os.MkdirAll(filepath.Dir(mcp), 0o755)
	os.WriteFile(mcp, []byte(`{"mcpServers": {"linear": {"type": "http", "url": "https://mcp.linear.app/mcp",
  "oauth": {"clientId": "abc123", "scopes": "read write", "callbackPort": 8080}}}}`), 0o644)
	code, stdout, stderr := asUser(t, home, "import", mcp, "--from", "claude", "--write")
	if code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
	}
	r := mustRead(t, filepath.Join(home, "cfg", "colibri", "external-mcp.json"))
	if !strings.Contains(r, `"grant": "authorization_code"`) || !strings.Contains(r, `"client_id": "abc123"`) {
		t.Errorf("registry:\n%s", r)
	}
	if !strings.Contains(stdout, "oauth.callbackPort not carried over") || !strings.Contains(stdout, "colibri-mcp auth login linear") {
		t.Errorf("output:\n%s", stdout)
	}
}

func selfForTest(t *testing.T) string {
	t.Helper()
	return importcmd.Self()
}

// import's summary of the variables colibri reads names --env-file: the
// file it wrote when given one, the flag that loads one when not; the
// preview and --write give the same hints.
func TestImportSummaryNamesEnvFile(t *testing.T) {
	home := t.TempDir()
	claude := filepath.Join(home, "cfg", "Claude", "claude_desktop_config.json")
	os.MkdirAll(filepath.Dir(claude), 0o755)
	os.WriteFile(claude, []byte(`{"mcpServers": {"gh": {"command": "npx", "args": ["-y", "gh-mcp@1.0.0"], "env": {"GITHUB_TOKEN": "ghp_x"}}}}`), 0o644)
	_, preview, _ := asUser(t, home, "import", "--from", "claude")
	if !strings.Contains(preview, "--env-file F loads") {
		t.Errorf("preview:\n%s", preview)
	}
	envPath := filepath.Join(home, "provider.env")
	code, stdout, stderr := asUser(t, home, "import", "--from", "claude", "--write", "--env-file", envPath)
	if code != 0 || !strings.Contains(stdout, "the moved secrets go to "+envPath+" (--env-file)") {
		t.Fatalf("import --write --env-file: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, l := range strings.Split(preview, "\n") {
		if strings.HasPrefix(l, "hint: ") && !strings.Contains(stdout, l) {
			t.Errorf("the preview's %q is not in --write's output:\n%s", l, stdout)
		}
	}
}
