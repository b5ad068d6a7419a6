package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// asUser runs colibri in-process as a user other than root, with HOME and
// XDG_CONFIG_HOME in a temporary folder; it returns the exit code, stdout
// and stderr.
func asUser(t *testing.T, home string, args ...string) (int, string, string) {
	t.Helper()
	ctx := context.WithValue(context.Background(), rootKey{}, false)
	var out, errb bytes.Buffer
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "cfg"), "PATH=" + os.Getenv("PATH")}
	err := run(ctx, append([]string{"colibri-mcp"}, args...), strings.NewReader(""), &out, &errb, env)
	return exitCode(err, &errb), out.String(), errb.String()
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// init, add and remove on the per-user registry of a fresh HOME, bad input
// included: each refusal leaves the file as it was.
func TestInitAddRemove(t *testing.T) {
	home := t.TempDir()
	reg := filepath.Join(home, "cfg", "colibri", "external-mcp.json")

	// No registry: the error names the paths tried and init/import.
	code, _, stderr := asUser(t, home, "servers")
	if code != 2 || !strings.Contains(stderr, reg) || !strings.Contains(stderr, "/usr/local/etc/colibri/external-mcp.json") ||
		!strings.Contains(stderr, "colibri-mcp init") || !strings.Contains(stderr, "colibri-mcp import") {
		t.Fatalf("servers without a registry: exit %d, stderr %q", code, stderr)
	}

	if code, _, stderr := asUser(t, home, "remove", "x"); code != 2 || !strings.Contains(stderr, "colibri-mcp init") {
		t.Fatalf("remove without a registry: exit %d, %q", code, stderr)
	}
	code, out, _ := asUser(t, home, "check")
	if code != 2 || !strings.Contains(out, "tried "+reg+", then /usr/local/etc/colibri/external-mcp.json") {
		t.Fatalf("check without a registry: exit %d, %q", code, out)
	}

	code, stdout, stderr := asUser(t, home, "init")
	if code != 0 || !strings.Contains(stdout, "wrote "+reg) || !strings.Contains(stdout, `"mcpServers"`) {
		t.Fatalf("init: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr = asUser(t, home, "init"); code != 2 || !strings.Contains(stderr, "--force") {
		t.Fatalf("init over a registry: exit %d, %q", code, stderr)
	}

	code, stdout, stderr = asUser(t, home, "add", "fs", "--env", "A=1", "--env", "NO_PROXY=localhost,127.0.0.1", "--", "npx", "-y", "some-server", "/tmp")
	if code != 0 || !strings.Contains(stdout, `"spare": 1`) || !strings.Contains(stdout, `"pass_env"`) {
		t.Fatalf("add: exit %d\n%s%s", code, stdout, stderr)
	}
	afterAdd := mustRead(t, reg)
	if !strings.Contains(afterAdd, `"fs": {`) || !strings.Contains(afterAdd, `"args": [`) || !strings.Contains(afterAdd, `"NO_PROXY": "localhost,127.0.0.1"`) {
		t.Fatalf("registry after add:\n%s", afterAdd)
	}
	if _, err := os.Stat(reg + ".bak"); err != nil {
		t.Fatalf("no FILE.bak after add: %v", err)
	}

	// An existing name is refused, the file untouched; --replace replaces it.
	if code, _, stderr = asUser(t, home, "add", "fs", "--", "echo"); code != 2 || !strings.Contains(stderr, "--replace") {
		t.Fatalf("add of an existing name: exit %d, %q", code, stderr)
	}
	if mustRead(t, reg) != afterAdd {
		t.Fatal("a refused add changed the registry")
	}
	if code, _, stderr = asUser(t, home, "add", "web", "--url", "https://example.com/mcp", "--bearer-token-env", "WEB_TOKEN"); code != 0 {
		t.Fatalf("add --url: exit %d, %q", code, stderr)
	}
	withWeb := mustRead(t, reg)
	if !strings.Contains(withWeb, `"bearer_token": "${WEB_TOKEN}"`) || !strings.HasPrefix(withWeb, afterAdd[:strings.Index(afterAdd, `"fs"`)]) {
		t.Fatalf("registry after add --url:\n%s", withWeb)
	}
	// The entry is validated as the registry is.
	if code, _, stderr = asUser(t, home, "add", "bad", "--url", "https://example.com/mcp#top"); code != 2 || !strings.Contains(stderr, "/servers/bad/url: must not hold a fragment") {
		t.Fatalf("add of an invalid entry: exit %d, %q", code, stderr)
	}

	// A name the registry does not allow, even one Go would quote oddly.
	if code, _, stderr = asUser(t, home, "add", "a b\x00", "--", "echo"); code != 2 || !strings.Contains(stderr, "is not allowed") {
		t.Errorf("add of a bad name: exit %d, %q", code, stderr)
	}

	// Unknown name: did you mean.
	if code, _, stderr = asUser(t, home, "remove", "fz"); code != 2 || !strings.Contains(stderr, `did you mean "fs"`) {
		t.Fatalf("remove of an unknown name: exit %d, %q", code, stderr)
	}
	if code, _, stderr = asUser(t, home, "remove", "fs"); code != 0 {
		t.Fatalf("remove: exit %d, %q", code, stderr)
	}
	if got := mustRead(t, reg); strings.Contains(got, `"fs"`) || !strings.Contains(got, `"web": {`) {
		t.Fatalf("registry after remove:\n%s", got)
	}

	// A registry that does not parse: refused, untouched.
	broken := "{\"servers\": {\"x\": {\"comand\": \"y\"}}}\n"
	os.WriteFile(reg, []byte(broken), 0o644)
	for _, args := range [][]string{{"add", "n", "--", "echo"}, {"remove", "x"}} {
		if code, _, stderr = asUser(t, home, args...); code != 2 || !strings.Contains(stderr, "invalid") {
			t.Errorf("%v on a broken registry: exit %d, %q", args, code, stderr)
		}
		if mustRead(t, reg) != broken {
			t.Fatalf("%v changed a broken registry", args)
		}
	}
	// init --force replaces even a broken one, keeping it.
	if code, _, stderr = asUser(t, home, "init", "--force"); code != 0 {
		t.Fatalf("init --force: exit %d, %q", code, stderr)
	}
	if code, _, _ = asUser(t, home, "servers"); code != 0 {
		t.Fatalf("servers on the new registry: exit %d", code)
	}
}

// import --write --apply --env-file with --from claude on a fresh HOME: the
// registry gets the servers, the env file the moved secret (0600), and the
// editor's file one colibri entry in place of the imported ones, its other
// settings kept.
func TestImportApplyEnvFile(t *testing.T) {
	home := t.TempDir()
	// The editor's file is a link into a dotfiles folder: it stays a link.
	claude := filepath.Join(home, "dotfiles", "claude_desktop_config.json")
	os.MkdirAll(filepath.Dir(claude), 0o755)
	link := filepath.Join(home, "cfg", "Claude", "claude_desktop_config.json")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(claude, link); err != nil {
		t.Fatal(err)
	}
	editor := `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
    "gh": {"command": "/usr/bin/gh-mcp", "env": {"GITHUB_TOKEN": "ghp_secretvalue"}}
  }
}
`
	os.WriteFile(claude, []byte(editor), 0o644)
	envPath := filepath.Join(home, "provider.env")
	reg := filepath.Join(home, "cfg", "colibri", "external-mcp.json")

	// An env file others may read is refused before anything is written.
	os.WriteFile(envPath, nil, 0o644)
	code, _, stderr := asUser(t, home, "import", "--from", "claude", "--write", "--apply", "--env-file", envPath)
	if code != 2 || !strings.Contains(stderr, "readable by others") {
		t.Fatalf("import with a world-readable env file: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(reg); err == nil || mustRead(t, claude) != editor {
		t.Fatal("a refused import wrote something")
	}
	os.Remove(envPath)

	// The editor's file changed between read and write: refused, kept.
	ctx := context.WithValue(context.WithValue(context.Background(), rootKey{}, false), beforeApplyKey{}, func() {
		os.WriteFile(claude, []byte(editor+" "), 0o644)
	})
	var out, errb bytes.Buffer
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "cfg")}
	err := run(ctx, []string{"colibri-mcp", "import", "--from", "claude", "--write", "--apply", "--env-file", envPath}, strings.NewReader(""), &out, &errb, env)
	if code := exitCode(err, &errb); code != 1 || !strings.Contains(errb.String(), "changed since it was read") {
		t.Fatalf("import --apply over a changed editor file: exit %d, %q", code, errb.String())
	}
	if mustRead(t, claude) != editor+" " {
		t.Fatal("the edit made meanwhile was lost")
	}
	os.WriteFile(claude, []byte(editor), 0o644)
	os.Remove(reg)
	os.Remove(reg + ".bak")
	os.Remove(envPath)

	// --apply takes the secret out of the editor's file: without an env
	// file it would be nowhere colibri reads. Refused, nothing written.
	code, _, stderr = asUser(t, home, "import", "--from", "claude", "--write", "--apply")
	if code != 2 || !strings.Contains(stderr, "(GITHUB_TOKEN)") || !strings.Contains(stderr, "--env-file") {
		t.Fatalf("import --apply of a secret without --env-file: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(reg); err == nil || mustRead(t, claude) != editor {
		t.Fatal("a refused import --apply wrote something")
	}

	code, stdout, stderr := asUser(t, home, "import", "--from", "claude", "--write", "--apply", "--env-file", envPath)
	if code != 0 {
		t.Fatalf("import --apply: exit %d\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "ghp_secretvalue") {
		t.Fatal("the secret was printed")
	}
	if !strings.Contains(stdout, `"pass_env"`) {
		t.Errorf("no pass_env suggestion for the npx entry:\n%s", stdout)
	}
	if got := mustRead(t, envPath); got != "GITHUB_TOKEN=ghp_secretvalue\n" {
		t.Errorf("env file = %q", got)
	}
	if st, _ := os.Stat(envPath); st.Mode().Perm() != 0o600 {
		t.Errorf("env file mode %v", st.Mode().Perm())
	}
	r := mustRead(t, reg)
	if !strings.Contains(r, `"GITHUB_TOKEN": "${GITHUB_TOKEN}"`) || !strings.Contains(r, `"fs"`) {
		t.Errorf("registry:\n%s", r)
	}
	got := mustRead(t, claude)
	if strings.Contains(got, `"fs"`) || strings.Contains(got, `"gh"`) || !strings.Contains(got, `"colibri": {`) ||
		!strings.Contains(got, `"globalShortcut": "Ctrl+Space"`) || !strings.Contains(got, reg) {
		t.Errorf("editor file after --apply:\n%s", got)
	}
	if mustRead(t, claude+".bak") != editor {
		t.Error("the editor's file was not kept as FILE.bak")
	}
	// The backup holds the moved secret: the user's alone, though the
	// editor's file was 0644.
	if st, _ := os.Stat(claude + ".bak"); st == nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the editor's FILE.bak, holding the secret, is not mode 0600: %v", st.Mode().Perm())
	}
	// The editor's colibri loads the secrets import moved: without it, gh
	// fails for want of GITHUB_TOKEN once the editor restarts.
	if !strings.Contains(got, `"--env-file",`) || !strings.Contains(got, `"`+envPath+`"`) {
		t.Errorf("the colibri entry does not load the env file:\n%s", got)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Error("the link to the editor's file was replaced by a file")
	}

	// serve --env-file loads it; one readable by others is refused.
	if code, _, stderr = asUser(t, home, "--env-file", envPath, "servers"); code != 0 {
		t.Errorf("servers --env-file: exit %d, %q", code, stderr)
	}
	os.Chmod(envPath, 0o644)
	if code, _, stderr = asUser(t, home, "--env-file", envPath, "servers"); code != 2 || !strings.Contains(stderr, "readable by others") {
		t.Errorf("--env-file readable by others: exit %d, %q", code, stderr)
	}
}

// Durations in log lines are milliseconds, in both formats.
func TestLogDurationsInMilliseconds(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var b bytes.Buffer
		log, err := newLogger("info", format, &b)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("x", "waited", 1500*time.Millisecond, "took_ms", 2*time.Millisecond)
		want := map[string][]string{"text": {"waited_ms=1500 ", "took_ms=2\n"}, "json": {`"waited_ms":1500,`, `"took_ms":2}`}}[format]
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s log %q lacks %q", format, b.String(), w)
			}
		}
	}
}

// An entry added with add, with pass_env, on a fresh HOME: the child gets
// the passed variables (and no other of colibri's), and runs in the
// registry's folder, whatever folder colibri was started in.
func TestPassEnvAndCwdDefault(t *testing.T) {
	home := t.TempDir()
	reg := filepath.Join(home, "cfg", "colibri", "external-mcp.json")
	if code, _, stderr := asUser(t, home, "add", "f", "--", fakeBin, "ok"); code != 0 {
		t.Fatalf("add: %d %q", code, stderr)
	}
	doc := strings.Replace(mustRead(t, reg), "{\n  \"servers\"", "{\n  \"pass_env\": [\"HTTPS_PROXY\", \"npm_config_*\"],\n  \"servers\"", 1)
	os.WriteFile(reg, []byte(doc), 0o644)
	ctx := context.WithValue(context.Background(), rootKey{}, false)
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "cfg"), "PATH=" + os.Getenv("PATH"),
		"HTTPS_PROXY=http://proxy:3128", "npm_config_registry=https://r", "npm_config__authToken=s3cret", "UNRELATED=x"}
	call := func(tool string) string {
		var out, errb bytes.Buffer
		err := run(ctx, []string{"colibri-mcp", "--external-call", "call", "f", tool}, strings.NewReader(""), &out, &errb, env)
		if code := exitCode(err, &errb); code != 0 {
			t.Fatalf("call %s: exit %d, %s", tool, code, errb.String())
		}
		return out.String()
	}
	got := call("env")
	for _, want := range []string{"HTTPS_PROXY=http://proxy:3128", "npm_config_registry=https://r"} {
		if !strings.Contains(got, want) {
			t.Errorf("the child lacks %s:\n%s", want, got)
		}
	}
	for _, not := range []string{"UNRELATED", "s3cret"} {
		if strings.Contains(got, not) {
			t.Errorf("the child got %s:\n%s", not, got)
		}
	}
	if got := strings.TrimSpace(call("cwd")); got != filepath.Dir(reg) {
		t.Errorf("the child runs in %q, want the registry's folder %q", got, filepath.Dir(reg))
	}
}

// add --env with a secret's literal value into a registry others may read
// is refused, the value never shown, with the ${NAME} form to write
// instead; a reference, or a registry of mode 0600, is accepted.
func TestAddRefusesLiteralSecret(t *testing.T) {
	home := t.TempDir()
	reg := filepath.Join(home, "cfg", "colibri", "external-mcp.json")
	if code, _, stderr := asUser(t, home, "init"); code != 0 {
		t.Fatalf("init: exit %d, %q", code, stderr)
	}
	before := mustRead(t, reg)
	const secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	code, stdout, stderr := asUser(t, home, "add", "gh", "--env", "GITHUB_TOKEN="+secret, "--", "/bin/true")
	if code != 2 || !strings.Contains(stderr, "'GITHUB_TOKEN=${GITHUB_TOKEN}'") {
		t.Fatalf("add with a literal token: exit %d, %q", code, stderr)
	}
	if strings.Contains(stdout+stderr, secret) || mustRead(t, reg) != before {
		t.Fatal("the secret was shown or written")
	}
	if code, _, stderr = asUser(t, home, "add", "gh", "--url", "https://example.com/mcp", "--header", "X-Api-Key="+secret); code != 2 || strings.Contains(stderr, secret) {
		t.Fatalf("add with a literal header secret: exit %d, %q", code, stderr)
	}
	if code, _, stderr = asUser(t, home, "add", "gh", "--env", "GITHUB_TOKEN=${GH_PAT}", "--env", "GOOGLE_APPLICATION_CREDENTIALS=/home/me/creds.json", "--", "/bin/true"); code != 0 {
		t.Fatalf("add with a reference: exit %d, %q", code, stderr)
	}
	os.Chmod(reg, 0o600)
	if code, _, stderr = asUser(t, home, "add", "gh2", "--env", "GITHUB_TOKEN="+secret, "--", "/bin/true"); code != 0 {
		t.Fatalf("add with a literal token into a 0600 registry: exit %d, %q", code, stderr)
	}
}

// add without "--": what follows the command is the command's, never add's
// flags (npx -y was "unknown flag --y: did you mean --h?", and a server's
// own --replace or --persistent went to add).
func TestAddWithoutDoubleDash(t *testing.T) {
	home := t.TempDir()
	reg := filepath.Join(home, "cfg", "colibri", "external-mcp.json")
	if code, _, stderr := asUser(t, home, "init"); code != 0 {
		t.Fatalf("init: exit %d, %q", code, stderr)
	}
	if code, _, stderr := asUser(t, home, "add", "fs", "--env", "A=1", "npx", "-y", "server", "--persistent", "--replace"); code != 0 {
		t.Fatalf("add without --: exit %d, %q", code, stderr)
	}
	var doc struct {
		Servers map[string]map[string]any `json:"servers"`
	}
	if err := json.Unmarshal([]byte(mustRead(t, reg)), &doc); err != nil {
		t.Fatal(err)
	}
	fs := doc.Servers["fs"]
	if got, _ := json.Marshal(fs["args"]); string(got) != `["-y","server","--persistent","--replace"]` || fs["lifecycle"] != nil {
		t.Errorf("entry = %v, want the command's flags in args and no lifecycle", fs)
	}
}

// import --env-file into an env file that its group may read (FreeBSD's
// provider.env, root:colibri 0640) keeps that mode, and says so: never
// "mode 0600" for a file that is not.
func TestImportEnvFileSaysItsMode(t *testing.T) {
	home := t.TempDir()
	claude := filepath.Join(home, "claude.json")
	os.WriteFile(claude, []byte(`{"mcpServers": {"gh": {"command": "/usr/bin/gh-mcp", "env": {"GITHUB_TOKEN": "ghp_secretvalue"}}}}`), 0o600)
	envPath := filepath.Join(home, "provider.env")
	os.WriteFile(envPath, []byte("OTHER=1\n"), 0o640)
	os.Chmod(envPath, 0o640)
	code, stdout, stderr := asUser(t, home, "import", claude, "--write", "--env-file", envPath)
	if code != 0 || !strings.Contains(stdout, "(mode 0640, kept: its group may read it)") || strings.Contains(stdout, "mode 0600") {
		t.Fatalf("import --env-file into a 0640 file: exit %d\n%s%s", code, stdout, stderr)
	}
	if got := mustRead(t, envPath); got != "OTHER=1\nGITHUB_TOKEN=ghp_secretvalue\n" {
		t.Errorf("env file = %q", got)
	}
}

// add with a 10 KB name says it is too long in one short line, not the
// name twice over (a 41 KB message).
func TestAddLongName(t *testing.T) {
	home := t.TempDir()
	asUser(t, home, "init")
	code, _, stderr := asUser(t, home, "add", strings.Repeat("a", 10240), "--", "/bin/true")
	if code != 2 || !strings.Contains(stderr, "10240 bytes long: at most 64") || len(stderr) > 300 {
		t.Fatalf("add with a 10 KB name: exit %d, %d bytes: %.300q", code, len(stderr), stderr)
	}
}

// add that cannot keep the old registry (the oldest backup, which would
// go, is a folder with files in it) says why once, and "nothing written"
// once, not twice.
func TestAddBackupFails(t *testing.T) {
	home := t.TempDir()
	reg := filepath.Join(home, "cfg", "colibri", "external-mcp.json")
	if code, _, stderr := asUser(t, home, "init"); code != 0 {
		t.Fatalf("init: exit %d, %q", code, stderr)
	}
	before := mustRead(t, reg)
	oldest := reg + ".bak." + strconv.Itoa(safefile.MaxBackups-1)
	os.MkdirAll(filepath.Join(oldest, "sub"), 0o700)
	code, _, stderr := asUser(t, home, "add", "x", "--", "/bin/true")
	if code != 1 || !strings.Contains(stderr, "removing the oldest backup") || strings.Count(stderr, "nothing written") != 1 || strings.Contains(stderr, " as :") {
		t.Fatalf("add whose backup fails: exit %d, %q", code, stderr)
	}
	if mustRead(t, reg) != before {
		t.Error("the registry changed")
	}
}

// import --apply and init with a relative --external-config: the editor's
// entry names the registry by its absolute path, since the editor starts
// colibri in a folder of its own.
func TestEditorEntryNamesRegistryAbsolutely(t *testing.T) {
	home := t.TempDir()
	t.Chdir(home)
	claude := filepath.Join(home, "claude.json")
	os.WriteFile(claude, []byte(`{"mcpServers": {"zz": {"command": "/usr/bin/zz"}}}`), 0o600)
	abs := filepath.Join(home, "rel.json")
	code, stdout, stderr := asUser(t, home, "--external-config", "rel.json", "init")
	if code != 0 || !strings.Contains(stdout, `"`+abs+`"`) {
		t.Fatalf("init --external-config rel.json: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr = asUser(t, home, "--external-config", "rel.json", "import", claude, "--from", "claude", "--write", "--apply"); code != 0 {
		t.Fatalf("import --apply: exit %d\n%s%s", code, stdout, stderr)
	}
	if got := mustRead(t, claude); !strings.Contains(got, `"`+abs+`"`) {
		t.Errorf("the colibri entry does not name %s:\n%s", abs, got)
	}
}

// add NAME -- ./server: the path is the one typed, relative to the folder
// add runs in, not to the registry's folder (where the registry resolves a
// relative command).
func TestAddRelativeCommand(t *testing.T) {
	home := t.TempDir()
	t.Chdir(home)
	reg := filepath.Join(home, "cfg", "colibri", "external-mcp.json")
	asUser(t, home, "init")
	if code, _, stderr := asUser(t, home, "add", "local", "--", "./bin/server", "./data"); code != 0 {
		t.Fatalf("add ./bin/server: exit %d, %q", code, stderr)
	}
	want := `"command": "` + filepath.Join(home, "bin", "server") + `"`
	if got := mustRead(t, reg); !strings.Contains(got, want) {
		t.Errorf("registry lacks %s:\n%s", want, got)
	}
}

// add --bearer-token-env given the token itself (ghp_… is a valid variable
// name) is refused, the token not shown nor written; a NAME is accepted.
func TestAddBearerTokenEnvRefusesAToken(t *testing.T) {
	home := t.TempDir()
	reg := filepath.Join(home, "cfg", "colibri", "external-mcp.json")
	asUser(t, home, "init")
	before := mustRead(t, reg)
	const token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	code, stdout, stderr := asUser(t, home, "add", "docs", "--url", "https://example.com/mcp", "--bearer-token-env", token)
	if code != 2 || !strings.Contains(stderr, "NAME of the variable") || strings.Contains(stdout+stderr, token) || mustRead(t, reg) != before {
		t.Fatalf("add --bearer-token-env TOKEN: exit %d, %q", code, stderr)
	}
	if code, _, stderr = asUser(t, home, "add", "docs", "--url", "https://example.com/mcp", "--bearer-token-env", "DOCS_TOKEN_2"); code != 0 {
		t.Fatalf("add --bearer-token-env DOCS_TOKEN_2: exit %d, %q", code, stderr)
	}
}

// add --url http://… beyond loopback is refused with the flag that opts
// in (the registry's own message names a JSON key add cannot write), and
// nothing is written; --allow-http writes "allow_http": true, which the
// registry accepts; loopback needs no flag; the opt-ins of a remote are
// refused for a command.
func TestAddAllowHTTP(t *testing.T) {
	home := t.TempDir()
	reg := filepath.Join(home, "cfg", "colibri", "external-mcp.json")
	asUser(t, home, "init")
	before := mustRead(t, reg)
	code, _, stderr := asUser(t, home, "add", "docs", "--url", "http://docs.example.com/mcp")
	if code != 2 || !strings.Contains(stderr, "plain http to docs.example.com") || !strings.Contains(stderr, "--allow-http") || mustRead(t, reg) != before {
		t.Fatalf("add --url http://: exit %d, %q", code, stderr)
	}
	if code, _, stderr = asUser(t, home, "add", "docs", "--url", "http://docs.example.com/mcp", "--allow-http", "--allow-private-network"); code != 0 {
		t.Fatalf("add --allow-http: exit %d, %q", code, stderr)
	}
	if got := mustRead(t, reg); !strings.Contains(got, `"allow_http": true`) || !strings.Contains(got, `"allow_private_network": true`) {
		t.Errorf("registry lacks the opt-ins:\n%s", got)
	}
	if code, _, stderr = asUser(t, home, "check"); strings.Contains(stderr, "allow_http") {
		t.Errorf("check: exit %d, %q", code, stderr)
	}
	if code, _, stderr = asUser(t, home, "add", "local", "--url", "http://127.0.0.1:8080/mcp"); code != 0 {
		t.Errorf("add --url http://127.0.0.1: exit %d, %q", code, stderr)
	}
	before = mustRead(t, reg)
	if code, _, stderr = asUser(t, home, "add", "cmd", "--allow-http", "--", "/bin/true"); code != 2 || !strings.Contains(stderr, "are for --url") || mustRead(t, reg) != before {
		t.Errorf("add --allow-http -- COMMAND: exit %d, %q", code, stderr)
	}
}

// import --apply run again, on an editor's file that holds colibri's entry
// already (the user added a server since): colibri is not imported into
// its own registry, and its entry keeps the user's arguments; only the
// registry it names is import's.
func TestImportApplyAgainKeepsColibriEntry(t *testing.T) {
	home := t.TempDir()
	reg := filepath.Join(home, "cfg", "colibri", "external-mcp.json")
	claude := filepath.Join(home, "claude.json")
	os.WriteFile(claude, []byte(`{"mcpServers": {
  "colibri": {"command": "/usr/local/bin/colibri-mcp", "args": ["--external-config", "/old.json", "--external-call", "--aggregate", "--env-file", "/home/me/provider.env"]},
  "nw": {"command": "/usr/bin/nw"}
}}`), 0o600)
	code, stdout, stderr := asUser(t, home, "import", claude, "--from", "claude", "--write", "--apply")
	if code != 0 {
		t.Fatalf("import --apply: exit %d\n%s%s", code, stdout, stderr)
	}
	if r := mustRead(t, reg); strings.Contains(r, `"colibri"`) || !strings.Contains(r, `"nw"`) {
		t.Errorf("registry:\n%s", r)
	}
	var doc struct {
		MCPServers map[string]struct {
			Args []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(mustRead(t, claude)), &doc); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(doc.MCPServers["colibri"].Args, " ")
	if want := "--external-config " + reg + " --external-call --aggregate --env-file /home/me/provider.env"; got != want || len(doc.MCPServers) != 1 {
		t.Errorf("colibri's args = %q, want %q (servers %v)", got, want, doc.MCPServers)
	}
}
