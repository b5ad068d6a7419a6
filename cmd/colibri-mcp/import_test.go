package main

// colibri-mcp import, in-process: each editor's sample file (under
// internal/editorconf/testdata, every one hiding the same secret literal)
// printed, as --json, and merged with --write; and its mistakes.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// importSecret is the literal each sample holds in an env, header or token
// value: it must never come out of import, whatever the mode (the .bak
// aside: it is the user's own registry, which never held it).
const importSecret = "sk-IMPORT-SECRET-123"

// importSamples are the editors' files, what import finds in each, and the
// secrets it moves.
var importSamples = []struct {
	editor string
	file   string
	says   string   // the format line
	names  []string // the entries, in order
	moved  []string // "moved to environment: …" lines
}{
	{"claude", "claude_desktop_config.json", `Claude Desktop ("mcpServers"): 3 servers`,
		[]string{"brave-search", "filesystem", "github"},
		[]string{"moved to environment: GITHUB_PERSONAL_ACCESS_TOKEN (server github)"}},
	{"cursor", "project/.cursor/mcp.json", `Cursor ("mcpServers"): 4 servers`,
		[]string{"context7", "linear", "notes", "postgres"},
		[]string{"moved to environment: LINEAR_AUTHORIZATION (server linear)", "moved to environment: PGPASSWORD (server postgres)"}},
	{"vscode", "project/.vscode/mcp.json", `VS Code ("servers"): 3 servers`,
		[]string{"fetch", "github", "playwright"},
		[]string{"moved to environment: FETCH_API_KEY (server fetch)"}},
	{"zed", "zed_settings.json", `Zed ("context_servers"): 3 servers`,
		[]string{"legacy", "remote", "sqlite"},
		[]string{"moved to environment: REMOTE_X_API_KEY (server remote)", "moved to environment: SQLITE_TOKEN (server sqlite)"}},
	{"codex", "codex_config.toml", "Codex ([mcp_servers.NAME]): 3 servers",
		[]string{"docs", "figma", "legacy"},
		[]string{"moved to environment: DOCS_API_KEY (server docs)", "moved to environment: FIGMA_X_SECRET_KEY (server figma)",
			"moved to environment: LEGACY_BEARER_TOKEN (server legacy)"}},
}

func sampleFile(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "internal", "editorconf", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || !strings.Contains(string(b), importSecret) {
		t.Fatalf("%s must hold %s: %v", p, importSecret, err)
	}
	return p
}

func noSecret(t *testing.T, where, s string) {
	t.Helper()
	if strings.Contains(s, importSecret) {
		t.Errorf("the secret literal appeared in %s:\n%s", where, s)
	}
}

// Without --write or --json, import prints each entry as registry JSON, the
// secrets it moved (by name), and writes nothing; the format is told from
// the content.
func TestImportPrints(t *testing.T) {
	for _, s := range importSamples {
		t.Run(s.editor, func(t *testing.T) {
			reg := filepath.Join(t.TempDir(), "external-mcp.json")
			code, stdout, stderr := runHere(t, []string{"HOME=/home/me"}, "--external-config", reg, "import", sampleFile(t, s.file))
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			noSecret(t, "stdout", stdout)
			if !strings.Contains(stdout, s.says) {
				t.Errorf("stdout lacks %q:\n%s", s.says, stdout)
			}
			last := -1
			for _, name := range s.names {
				i := strings.Index(stdout, "\n"+`"`+name+`": {`)
				if i < last {
					t.Errorf("entry %q missing or out of order:\n%s", name, stdout)
				}
				last = i
			}
			for _, m := range s.moved {
				if !strings.Contains(stdout, m+"\n") {
					t.Errorf("stdout lacks %q:\n%s", m, stdout)
				}
			}
			if !strings.Contains(stdout, "Nothing written: --write merges these into "+reg) {
				t.Errorf("stdout does not say that nothing was written:\n%s", stdout)
			}
			if _, err := os.Stat(reg); err == nil {
				t.Error("import without --write created the registry")
			}
		})
	}
}

// --json prints exactly a registry document: {"servers": {…}} and nothing
// else on stdout; the findings go to stderr.
func TestImportJSON(t *testing.T) {
	for _, s := range importSamples {
		t.Run(s.editor, func(t *testing.T) {
			code, stdout, stderr := runHere(t, []string{"HOME=/home/me"}, "import", "--from", s.editor, sampleFile(t, s.file), "--json")
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			noSecret(t, "stdout", stdout)
			noSecret(t, "stderr", stderr)
			var doc map[string]map[string]json.RawMessage
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc) != 1 {
				t.Fatalf("stdout is not a registry document (%v):\n%s", err, stdout)
			}
			var names []string
			for name := range doc["servers"] {
				names = append(names, name)
			}
			slices.Sort(names)
			if !slices.Equal(names, s.names) {
				t.Errorf("servers %q, want %q", names, s.names)
			}
			if !strings.HasPrefix(stderr, sampleFile(t, s.file)+", "+s.says+"\n") {
				t.Errorf("stderr does not begin with the file read:\n%s", stderr)
			}
			for _, m := range s.moved {
				if !strings.Contains(stderr, m+"\n") {
					t.Errorf("stderr lacks %q:\n%s", m, stderr)
				}
			}
		})
	}
	// Command entries alone make a registry that colibri itself accepts.
	_, stdout, _ := runHere(t, nil, "import", sampleFile(t, "claude_desktop_config.json"), "--json")
	reg, err := registry.Parse(strings.NewReader(stdout), "")
	if err != nil || len(reg.Servers) != 3 || reg.Servers["github"].Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "${GITHUB_PERSONAL_ACCESS_TOKEN}" {
		t.Errorf("the registry does not accept import's document: %v\n%s", err, stdout)
	}
}

// --write merges into the registry: new names are added, a name it has is
// kept as it was and reported, the old file is kept as FILE.bak, the mode
// stays, and the result is a valid registry that holds no secret. Remote
// entries are written as url entries.
func TestImportWrite(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "external-mcp.json")
	before := `{
  "$schema": "../docs/registry.schema.json",
  "servers": {
    "postgres": { "command": "/usr/local/bin/pg-mcp", "env": { "PGPASSWORD": "${PG_PASSWORD}" } },
    "demo": { "command": "/usr/local/bin/demo-mcp-server" }
  }
}
`
	if err := os.WriteFile(reg, []byte(before), 0o640); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runHere(t, []string{"HOME=/home/me"}, "--external-config", reg, "import", sampleFile(t, "project/.cursor/mcp.json"), "--write")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	noSecret(t, "stdout", stdout)
	added := []string{"context7", "linear", "notes"}
	for _, want := range []string{
		"kept: postgres: the registry has these names already; not overwritten\n",
		"added to " + reg + ": " + strings.Join(added, ", ") + "\n",
		"the previous registry is kept as " + reg + ".bak\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "not written") {
		t.Errorf("an entry was not written:\n%s", stdout)
	}
	// postgres was kept: its secret was not moved by this import.
	if strings.Contains(stdout, "PGPASSWORD (server postgres)") {
		t.Errorf("a kept entry's secret is listed as moved:\n%s", stdout)
	}

	after, err := os.ReadFile(reg)
	if err != nil {
		t.Fatal(err)
	}
	noSecret(t, "the registry", string(after))
	got, err := registry.Load(reg)
	if err != nil {
		t.Fatalf("the written registry: %v\n%s", err, after)
	}
	if want := append([]string{"demo", "postgres"}, added...); !slices.Equal(got.Names(), sortedCopy(want)) {
		t.Errorf("servers %q, want %q", got.Names(), want)
	}
	if pg := got.Servers["postgres"]; pg.Command != "/usr/local/bin/pg-mcp" || pg.Env["PGPASSWORD"] != "${PG_PASSWORD}" {
		t.Errorf("the registry's own postgres was overwritten: %+v", pg)
	}
	if n := got.Servers["notes"]; n.Command != "/home/me/bin/notes-mcp" || n.Args[1] != filepath.Join(filepath.Dir(filepath.Dir(sampleFile(t, "project/.cursor/mcp.json"))), "notes") {
		t.Errorf("notes: %+v", n)
	}
	if !strings.HasPrefix(string(after), "{\n  \"$schema\": \"../docs/registry.schema.json\",\n  \"servers\": {\n    \"postgres\": {") {
		t.Errorf("the registry's own keys lost their order:\n%s", after)
	}
	if bak, err := os.ReadFile(reg + ".bak"); err != nil || string(bak) != before {
		t.Errorf("FILE.bak is not the old registry (%v):\n%s", err, bak)
	}
	for _, f := range []string{reg, reg + ".bak"} {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v (%v), want the old file's 0640", f, st.Mode().Perm(), err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("files left in the registry's folder: %v", entries)
	}

	// Again: every name is there now; nothing is written, .bak stays.
	code, stdout, _ = runHere(t, []string{"HOME=/home/me"}, "--external-config", reg, "import", sampleFile(t, "project/.cursor/mcp.json"), "--write")
	if again, _ := os.ReadFile(reg); code != 0 || !bytes.Equal(again, after) || !strings.Contains(stdout, "Nothing written: "+reg+" is unchanged.") {
		t.Errorf("a second import: exit %d, registry changed: %v\n%s", code, !bytes.Equal(again, after), stdout)
	}
	if bak, _ := os.ReadFile(reg + ".bak"); string(bak) != before {
		t.Error("a second import that wrote nothing replaced FILE.bak")
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// --write creates a registry that does not exist yet (and its folder), with
// mode 0644 and no .bak; every editor's sample gives a valid registry.
func TestImportWriteCreates(t *testing.T) {
	for _, s := range importSamples {
		t.Run(s.editor, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "colibri")
			reg := filepath.Join(dir, "external-mcp.json")
			code, stdout, stderr := runHere(t, []string{"HOME=/home/me"}, "--external-config", reg, "import", sampleFile(t, s.file), "--write")
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
			}
			noSecret(t, "stdout", stdout)
			data, err := os.ReadFile(reg)
			if err != nil {
				t.Fatal(err)
			}
			noSecret(t, "the registry", string(data))
			if _, err := registry.Load(reg); err != nil {
				t.Errorf("the written registry is invalid: %v", err)
			}
			if st, _ := os.Stat(reg); st.Mode().Perm() != 0o644 {
				t.Errorf("mode %v, want 0644", st.Mode().Perm())
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("files beside the new registry: %v", entries)
			}
		})
	}
}

// An invalid registry is never written to: import refuses, and the file
// and its folder stay as they were.
func TestImportWriteRefusesInvalidRegistry(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "external-mcp.json")
	bad := `{"servers": {"x": {"command": "/bin/true", "argz": []}}}`
	os.WriteFile(reg, []byte(bad), 0o644)
	code, stdout, stderr := runHere(t, nil, "--external-config", reg, "import", sampleFile(t, "claude_desktop_config.json"), "--write")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "the registry is invalid, nothing written") || !strings.Contains(stderr, `"argz": did you mean "args"?`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if after, _ := os.ReadFile(reg); string(after) != bad {
		t.Error("the invalid registry was changed")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files written beside it: %v", entries)
	}
}

// Without FILE, --from reads the editor's usual file under HOME.
func TestImportFromUsualPlace(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct{ editor, sample, place string }{
		{"codex", "codex_config.toml", ".codex/config.toml"},
		{"claude", "claude_desktop_config.json", ".config/Claude/claude_desktop_config.json"},
		{"zed", "zed_settings.json", ".config/zed/settings.json"},
	} {
		data, _ := os.ReadFile(sampleFile(t, tc.sample))
		path := filepath.Join(home, tc.place)
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, data, 0o600)
		code, stdout, stderr := runHere(t, []string{"HOME=" + home, "XDG_CONFIG_HOME=", "CODEX_HOME="}, "import", "--from", tc.editor)
		if code != 0 || !strings.HasPrefix(stdout, path+", ") {
			t.Errorf("--from %s: exit %d, stderr %q, stdout:\n%s", tc.editor, code, stderr, stdout)
		}
		noSecret(t, "stdout", stdout)
	}
}

// Mistakes: exit 2, one line on stderr saying what and where, nothing on
// stdout, never the secret.
func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		return p
	}
	badJSON := file("bad.json", "{\n  // Cursor\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\", \"env\": {\"API_KEY\": sk-IMPORT-SECRET-123}}\n  }\n}\n")
	// A bare word is quoted by the TOML decoder's message, up to the
	// first character that is not a key's: the secret without its dashes.
	badTOML := file("bad.toml", "[mcp_servers.a]\ncommand = \"x\"\nbearer_token = skIMPORTSECRET123\n")
	badType := file("type.json", `{"mcpServers": {"a": {"command": "x", "args": ["--token", 123]}}}`)
	unknown := file("prefs.json", `{"theme": "dark", "token": "sk-IMPORT-SECRET-123"}`)
	ambiguous := file("servers.json", `{"servers": {"a": {"command": "x", "env": {"TOKEN": "sk-IMPORT-SECRET-123"}}}}`)
	both := file("both.json", `{"mcpServers": {}, "context_servers": {}}`)
	for _, tc := range []struct {
		name string
		args []string
		says []string
	}{
		{"bad JSON", []string{badJSON}, []string{"import: " + badJSON + ": line 4, column 46: invalid JSON: invalid character 's'"}},
		{"bad TOML", []string{badTOML}, []string{"import: " + badTOML + ": line 3, column 16: invalid TOML: expected value"}},
		{"a wrong type", []string{badType}, []string{"import: " + badType + ": /mcpServers/a/args/1: want a string, got a number"}},
		{"an unknown format", []string{unknown}, []string{"cannot tell which editor's file this is", `none of "mcpServers"`, "give --from claude|cursor|vscode|zed|codex"}},
		{"ambiguous", []string{ambiguous}, []string{`"servers" entries have no "type"`, "give --from"}},
		{"two shapes", []string{both}, []string{`"mcpServers" and "context_servers"`, "give --from"}},
		{"no such file", []string{filepath.Join(dir, "nope.json")}, []string{"nope.json: no such file or directory"}},
		{"a folder", []string{dir}, []string{"not a regular file"}},
		{"an unknown editor", []string{"--from", "vscod", badJSON}, []string{`import: --from "vscod": did you mean "vscode"?`, "colibri-mcp import --help"}},
		{"nothing to read", nil, []string{"give the editor's FILE, or --from EDITOR (claude, cursor, vscode, zed, codex)"}},
		{"--json and --write", []string{badJSON, "--json", "--write"}, []string{"give one"}},
		{"two files", []string{badJSON, badTOML}, []string{"is one too many"}},
		{"no usual file", []string{"--from", "codex"}, []string{"import: no Codex ([mcp_servers.NAME]) configuration at " + dir + "/.codex/config.toml: give its FILE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runHere(t, []string{"HOME=" + dir, "CODEX_HOME="}, append([]string{"import"}, tc.args...)...)
			if code != exitUsage || stdout != "" {
				t.Errorf("exit %d, stdout %q; want exit 2 and nothing", code, stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "colibri-mcp: ") {
				t.Errorf("stderr %q, want one line", stderr)
			}
			for _, s := range tc.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q lacks %q", stderr, s)
				}
			}
			noSecret(t, "stderr", stderr)
			if strings.Contains(stderr, "IMPORTSECRET") {
				t.Errorf("the secret appeared in stderr: %s", stderr)
			}
		})
	}
}

// import is in the help and in shell completion (which reads os.Args:
// the built binary, not run in-process).
func TestImportInHelpAndCompletion(t *testing.T) {
	if code, stdout, _ := runHere(t, nil, "help"); code != 0 || !strings.Contains(stdout, "\n   import ") {
		t.Errorf("help: exit %d, no import:\n%s", code, stdout)
	}
	if code, stdout, _ := runCLI(t, nil, "--generate-shell-completion"); code != 0 || !strings.Contains(stdout, "\nimport:") {
		t.Errorf("completion: exit %d, no import:\n%s", code, stdout)
	}
	_, stdout, _ := runHere(t, nil, "help", "import")
	for _, s := range []string{"--from EDITOR", "--write", "--json", "[FILE]", "colibri-mcp import --from cursor", "Exit codes:"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("help import lacks %q:\n%s", s, stdout)
		}
	}
}

// A registry path that is a symbolic link stays one: the file it points to
// is replaced, and kept as its .bak beside it.
func TestImportWriteFollowsLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.json")
	link := filepath.Join(dir, "external-mcp.json")
	before := `{"servers": {}}`
	os.WriteFile(target, []byte(before), 0o644)
	if err := os.Symlink("real.json", link); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runHere(t, nil, "--external-config", link, "import", sampleFile(t, "claude_desktop_config.json"), "--write")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file (%v)", err)
	}
	if reg, err := registry.Load(target); err != nil || len(reg.Servers) != 3 {
		t.Errorf("the link's target: %v", err)
	}
	if bak, _ := os.ReadFile(target + ".bak"); string(bak) != before {
		t.Errorf("%s.bak = %q", target, bak)
	}
}

// A secret that must stay in the registry (colibri passes argv unchanged;
// a URL is kept as it is) is noted and hidden in what import prints, in
// every mode but --json, whose document is the registry; a URL with a
// password in an env value is moved like any secret.
func TestImportHidesSecretsThatStay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	os.WriteFile(file, []byte(`{"mcpServers": {
		"pg": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://me:argv-url-secret@localhost/db", "--api-key", "argv-flag-secret"],
		       "env": {"DATABASE_URL": "postgres://me:env-url-secret@localhost/db"}}}}`), 0o644)
	stay := []string{"argv-url-secret", "argv-flag-secret"}
	reg := filepath.Join(t.TempDir(), "external-mcp.json")
	for _, mode := range [][]string{nil, {"--write"}} {
		code, stdout, stderr := runHere(t, nil, append([]string{"--external-config", reg, "import", file}, mode...)...)
		if code != 0 {
			t.Fatalf("import %v: exit %d: %s", mode, code, stderr)
		}
		for _, secret := range append(stay, "env-url-secret") {
			if strings.Contains(stdout+stderr, secret) {
				t.Errorf("import %v printed %s:\n%s%s", mode, secret, stdout, stderr)
			}
		}
		if !strings.Contains(stdout, "moved to environment: DATABASE_URL (server pg)") || !strings.Contains(stdout, "args/2 is a URL with a password") {
			t.Errorf("import %v does not say what it moved and what stays:\n%s", mode, stdout)
		}
		if mode == nil && !strings.Contains(stdout, `"postgresql://me:<hidden>@localhost/db"`) {
			t.Errorf("the preview does not show where the hidden value is:\n%s", stdout)
		}
	}
	written, _ := os.ReadFile(reg)
	if strings.Contains(string(written), "env-url-secret") || !strings.Contains(string(written), `"DATABASE_URL": "${DATABASE_URL}"`) {
		t.Errorf("the registry:\n%s", written)
	}
	for _, secret := range stay {
		if !strings.Contains(string(written), secret) {
			t.Errorf("the registry lacks the argument %s, which the server needs:\n%s", secret, written)
		}
	}
}

// Each import keeps the registry it replaced as FILE.bak, the newest
// always, the older ones moving to FILE.bak.1, FILE.bak.2, … (at most five
// kept, docs/import.md), and says which.
func TestImportWriteKeepsEveryBackup(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "external-mcp.json")
	original := `{"servers": {"mine": {"command": "/usr/local/bin/mine"}}}`
	os.WriteFile(reg, []byte(original), 0o600)
	// A link planted where the second backup would go is not followed.
	os.Symlink(filepath.Join(dir, "elsewhere"), reg+".bak.1")
	var states []string
	for i, name := range []string{"one", "two", "three"} {
		file := filepath.Join(t.TempDir(), "claude_desktop_config.json")
		os.WriteFile(file, []byte(`{"mcpServers": {"`+name+`": {"command": "/usr/local/bin/`+name+`"}}}`), 0o644)
		before, _ := os.ReadFile(reg)
		states = append(states, string(before))
		code, stdout, stderr := runHere(t, nil, "--external-config", reg, "import", file, "--write")
		if code != 0 || !strings.Contains(stdout, "the previous registry is kept as "+reg+".bak\n") {
			t.Fatalf("import %d: exit %d, want the backup %s.bak:\n%s%s", i+1, code, reg, stdout, stderr)
		}
	}
	// The newest first.
	for i, bak := range []string{".bak.2", ".bak.1", ".bak"} {
		got, err := os.ReadFile(reg + bak)
		if err != nil || string(got) != states[i] {
			t.Errorf("%s: %q (%v), want the registry before import %d: %q", bak, got, err, i+1, states[i])
		}
		if st, _ := os.Stat(reg + bak); st == nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: not the registry's mode 0600", bak)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Error("a backup was written through a link")
	}
}

// An editor's file with a key twice in one object is refused by import, as
// the registry refuses one: it used to take the last silently, while some
// editors keep the first.
func TestHostileImportDuplicateKeys(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mcp.json")
	os.WriteFile(file, []byte(`{"mcpServers": {"a": {"command": "/bin/true"}, "a": {"command": "/bin/false"}}}`), 0o644)
	code, stdout, stderr := runHere(t, nil, "--external-config", filepath.Join(dir, "reg.json"), "import", file)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "/mcpServers") || !strings.Contains(stderr, `"a"`) {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 naming the duplicate", code, stdout, stderr)
	}
}
