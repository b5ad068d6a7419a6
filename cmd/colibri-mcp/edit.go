package main

// colibri-mcp init, add and remove: a registry of one's own without editing
// JSON by hand (CONTRACT.md section 1). registry.Edit validates, keeps
// FILE.bak and replaces the file atomically; this file reads flags and
// prints.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/internal/atomicfile"
	"github.com/colibri-mcp/colibri-mcp/internal/editorconf"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/registry/regfile"
)

type settingsAction = func(func(context.Context, *cli.Command, *settings) error) cli.ActionFunc

// editCommands are init, add and remove.
func editCommands(withSettings settingsAction, stdout io.Writer, servers cli.ShellCompleteFunc) []*cli.Command {
	return []*cli.Command{
		{
			Name:  "init",
			Usage: "write a starter registry at the default path (the demo server, if installed) and show how editors register colibri",
			Description: "Writes ~/.config/colibri/external-mcp.json ($XDG_CONFIG_HOME/colibri/…) for a user\n" +
				"other than root, /usr/local/etc/colibri/external-mcp.json for root, or --external-config.\n" +
				"An existing registry is never overwritten without --force (then it is kept as FILE.bak).\n\n" +
				"Examples:\n  colibri-mcp init\n  colibri-mcp init --force" + exitCodesHelp,
			Flags: []cli.Flag{&cli.BoolFlag{Name: "force", Usage: "replace an existing registry (kept as FILE.bak)"}},
			Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
				if err := wantArgs(cmd, 0, 0); err != nil {
					return err
				}
				return cmdInit(s, cmd.Bool("force"), safe(stdout))
			}),
		},
		{
			Name:  "add",
			Usage: "add one server to the registry",
			// --env NO_PROXY=localhost,127.0.0.1 is one value, not two.
			DisableSliceFlagSeparator: true,
			// Everything after NAME and the command is the command's, even
			// without "--": add fs npx -y server --replace passes -y and
			// --replace to the server, never to add.
			StopOnNthArg: &addCommandArgs,
			ArgsUsage:    "NAME [-- COMMAND [ARGS…]]",
			Description: "A local server: add NAME [--env K=V]… [--persistent] -- COMMAND [ARGS…]\n" +
				"A remote one:   add NAME --url URL [--header K=V]… [--bearer-token-env NAME]\n" +
				"The entry is validated as the registry is; a name that exists is refused unless\n" +
				"--replace. The registry is rewritten atomically (other entries' text untouched), the\n" +
				"old one kept as FILE.bak. Write secrets as ${NAME} (set NAME where colibri runs).\n\n" +
				"Examples:\n" +
				"  colibri-mcp add fs -- npx -y @modelcontextprotocol/server-filesystem ~/src\n" +
				"  colibri-mcp add gh --env 'GITHUB_TOKEN=${GITHUB_PAT}' -- github-mcp-server stdio\n" +
				"  colibri-mcp add docs --url https://example.com/mcp --bearer-token-env DOCS_TOKEN" + exitCodesHelp,
			Flags: []cli.Flag{
				&cli.StringSliceFlag{Name: "env", Usage: "`K=V` for the child's environment (repeat; ${NAME} reads colibri's)"},
				&cli.BoolFlag{Name: "persistent", Usage: "keep one warm session instead of a process per request"},
				&cli.BoolFlag{Name: "replace", Usage: "replace a server of that name"},
				&cli.StringFlag{Name: "url", Usage: "a remote MCP server's `URL` instead of a command"},
				&cli.StringSliceFlag{Name: "header", Usage: "`K=V` sent with every request to --url (repeat)"},
				&cli.StringFlag{Name: "bearer-token-env", Usage: "send Authorization: Bearer with colibri's variable `NAME`"},
			},
			Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
				name, entry, err := addEntry(cmd)
				if err != nil {
					return err
				}
				return cmdAdd(s, name, entry, cmd.Bool("replace"), safe(stdout))
			}),
		},
		{
			Name:          "remove",
			Usage:         "remove one server from the registry (kept in FILE.bak)",
			ArgsUsage:     "NAME",
			ShellComplete: servers,
			Description:   "Examples:\n  colibri-mcp remove demo" + exitCodesHelp,
			Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
				if err := wantArgs(cmd, 1, 1); err != nil {
					return err
				}
				return cmdRemove(s, cmd.Args().First(), safe(stdout))
			}),
		},
	}
}

// addCommandArgs is where add stops reading flags: after NAME and COMMAND.
var addCommandArgs = 2

// entry is what add writes, keys in the registry's documented order.
type entry struct {
	Command     string            `json:"command,omitempty"`
	URL         string            `json:"url,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	BearerToken string            `json:"bearer_token,omitempty"`
	Lifecycle   string            `json:"lifecycle,omitempty"`
}

// addEntry reads add's arguments into an entry.
func addEntry(cmd *cli.Command) (string, *entry, error) {
	bad := func(format string, a ...any) (string, *entry, error) {
		return "", nil, usage(fmt.Errorf("add: "+format+" (%s)", append(a, helpHint(cmd))...))
	}
	args := cmd.Args().Slice()
	if len(args) == 0 {
		return bad("needs NAME")
	}
	name, rest := args[0], args[1:]
	if len(name) > 64 {
		// Said without the name: the registry's message would repeat all of
		// it, twice.
		return bad("NAME is %d bytes long: at most 64 (letters, digits, _ . -, starting with a letter or digit)", len(name))
	}
	e := &entry{URL: cmd.String("url")}
	pairs := func(flag string) (map[string]string, error) {
		var m map[string]string
		for _, kv := range cmd.StringSlice(flag) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--%s %q: want K=V", flag, kv)
			}
			if m == nil {
				m = map[string]string{}
			}
			m[k] = v
		}
		return m, nil
	}
	var err error
	if e.Env, err = pairs("env"); err != nil {
		return bad("%v", err)
	}
	if e.Headers, err = pairs("header"); err != nil {
		return bad("%v", err)
	}
	if v := cmd.String("bearer-token-env"); v != "" {
		if !upperName(v) {
			// ghp_… is a valid variable name, and would lie in the
			// registry in clear, and in every "not set" error after.
			return bad("--bearer-token-env wants the NAME of the variable that holds the token, in upper case (DOCS_TOKEN), not the token: the value given (not shown) was not written")
		}
		e.BearerToken = "${" + v + "}"
	}
	switch {
	case e.URL != "" && len(rest) > 0:
		return bad("give --url or -- COMMAND, not both")
	case e.URL != "":
		if e.Env != nil {
			return bad("--env is for a command; a remote server takes --header")
		}
		if cmd.Bool("persistent") {
			return bad("a remote server keeps one session already (--persistent is for commands)")
		}
	case len(rest) == 0:
		return bad("give the server's command after --, or --url URL")
	default:
		if e.Headers != nil || e.BearerToken != "" {
			return bad("--header and --bearer-token-env are for --url")
		}
		e.Command, e.Args = rest[0], rest[1:]
		if strings.Contains(e.Command, "/") && !filepath.IsAbs(e.Command) {
			// Typed relative to the folder add runs in; the registry would
			// resolve it against its own folder.
			e.Command = absPath(e.Command)
		}
		if cmd.Bool("persistent") {
			e.Lifecycle = registry.Persistent
		}
	}
	return name, e, nil
}

func cmdAdd(s *settings, name string, e *entry, replace bool, w io.Writer) error {
	path := s.writePath()
	if err := literalSecrets(path, e); err != nil {
		return usage(fmt.Errorf("add: %w: nothing written", err))
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return failed(err)
	}
	backup, err := regfile.Edit(path, func(old []byte) ([]byte, error) {
		return regfile.AddServer(old, name, raw, replace)
	})
	if err != nil {
		return editError("add", err)
	}
	fmt.Fprintf(w, "added %q to %s\n", name, path)
	if backup != "" {
		fmt.Fprintf(w, "the previous registry is kept as %s\n", backup)
	}
	for _, h := range addHints(e.Command) {
		fmt.Fprintln(w, "hint:", h)
	}
	fmt.Fprintf(w, "try: colibri-mcp list-tools %s\n", name)
	return nil
}

// upperName reports whether s is a variable name in upper case, as the
// variables that hold tokens are named: [A-Z_][A-Z0-9_]*.
func upperName(s string) bool {
	for i, r := range s {
		if !(r >= 'A' && r <= 'Z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// literalSecrets refuses an --env or --header whose name looks secret
// (editorconf.SecretName) and whose value is a literal, not a ${NAME}
// reference nor an absolute path, when the registry is, or would be
// created, readable by others: the secret would lie there in clear. The value is never shown. A
// registry of mode 0600 may hold one.
func literalSecrets(path string, e *entry) error {
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 == 0 {
		return nil
	}
	for _, f := range []struct {
		flag string
		m    map[string]string
	}{{"env", e.Env}, {"header", e.Headers}} {
		for _, k := range slices.Sorted(maps.Keys(f.m)) {
			// A path names where a secret lies (GOOGLE_APPLICATION_CREDENTIALS,
			// PASSWORD_FILE): it is not one.
			if v := f.m[k]; v != "" && !strings.Contains(v, "${") && !filepath.IsAbs(v) && editorconf.SecretName(k) {
				ref := editorconf.VarName(k)
				return fmt.Errorf("--%s %s holds a literal secret, which would lie in clear in %s (readable by others): "+
					"write --%s '%s=${%s}' and set %s where colibri runs ('colibri-mcp --env-file F' loads it from a mode-0600 file), or make the registry mode 0600 first",
					f.flag, k, path, f.flag, k, ref, ref)
			}
		}
	}
	return nil
}

// addHints are what a server started by a package runner or an interpreter
// is better with: a process kept ready (its start is slow), and for npx and
// uvx the proxy, CA and package-manager settings the explicit environment
// leaves out.
func addHints(command string) []string {
	base := strings.TrimSuffix(filepath.Base(command), ".exe")
	var hints []string
	if slices.Contains([]string{"npx", "uvx", "node", "python", "python3", "bunx", "deno"}, base) {
		hints = append(hints, fmt.Sprintf(`%s starts slowly (hundreds of milliseconds): "spare": 1 in the entry keeps one process ready for the next request`, base))
	}
	if base == "npx" || base == "uvx" {
		hints = append(hints, fmt.Sprintf(`%s needs the proxy, CA and package settings colibri does not pass by default: "pass_env": ["HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "npm_config_*"]`, base))
	}
	return hints
}

func cmdRemove(s *settings, name string, w io.Writer) error {
	path := s.writePath()
	backup, err := regfile.Edit(path, func(old []byte) ([]byte, error) {
		if old == nil {
			return nil, fmt.Errorf("%s: %w (colibri-mcp init writes one)", path, fs.ErrNotExist)
		}
		return regfile.RemoveServer(old, name)
	})
	if err != nil {
		return editError("remove", err)
	}
	fmt.Fprintf(w, "removed %q from %s (the previous registry is kept as %s)\n", name, path, backup)
	return nil
}

// editError maps a refused change: the person's mistake (a name, an
// invalid registry) is a usage error; a write that failed is a failure.
func editError(cmd string, err error) error {
	var re *registry.Error
	var ue *regfile.UnknownServerError
	switch {
	case errors.As(err, &re), errors.As(err, &ue), errors.Is(err, regfile.ErrExists), errors.Is(err, fs.ErrNotExist):
		return usage(fmt.Errorf("%s: %w", cmd, err))
	case errors.Is(err, atomicfile.ErrChanged):
		return failed(fmt.Errorf("%s: %w", cmd, err))
	}
	if strings.Contains(err.Error(), "nothing written") {
		return failed(fmt.Errorf("%s: %w", cmd, err))
	}
	return failed(fmt.Errorf("%s: %w: nothing written", cmd, err))
}

// cmdInit writes the starter registry.
func cmdInit(s *settings, force bool, w io.Writer) error {
	path := s.writePath()
	target := path
	if t, err := filepath.EvalSymlinks(path); err == nil {
		target = t // a link stays a link: the file it points to is replaced
	}
	old, mode, err := atomicfile.Read(target, registry.MaxFileSize)
	if err != nil {
		return failed(fmt.Errorf("init: %w", err))
	}
	if old != nil && !force {
		return usage(fmt.Errorf("init: %s exists already: nothing written (--force replaces it, keeping it as %s.bak; 'colibri-mcp add' adds a server to it)", path, path))
	}
	doc := []byte("{\n  \"servers\": {}\n}\n")
	demo := installedDemo()
	if demo != "" {
		raw, _ := json.Marshal(map[string]string{"command": demo, "description": "colibri's demo server: echo, add, slow"})
		if doc, err = regfile.AddServer(doc, "demo", raw, false); err != nil {
			return failed(fmt.Errorf("init: %w", err))
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return failed(fmt.Errorf("init: %w", err))
	}
	backup := ""
	if old != nil {
		if backup, err = atomicfile.Backup(target, old, mode); err != nil {
			return failed(fmt.Errorf("init: keeping %s: %w: nothing written", backup, err))
		}
	} else {
		mode = 0o644
	}
	if err := atomicfile.Replace(target, doc, mode, old); err != nil {
		if backup != "" {
			os.Remove(backup)
		}
		return failed(fmt.Errorf("init: %w", err))
	}
	fmt.Fprintf(w, "wrote %s\n", path)
	if backup != "" {
		fmt.Fprintf(w, "the previous registry is kept as %s\n", backup)
	}
	if demo != "" {
		fmt.Fprintf(w, "it holds the demo server (%s): try 'colibri-mcp list-tools demo'\n", demo)
	}
	fmt.Fprintf(w, "add servers with 'colibri-mcp add NAME -- COMMAND [ARGS…]', or 'colibri-mcp import --from EDITOR --write'\n\n")
	if transientBuild(selfPath()) {
		fmt.Fprint(w, transientNote)
	}
	fmt.Fprint(w, editorSnippet(selfPath(), path, false))
	return nil
}

// editorSnippet is the entry that registers colibri in the usual editors.
func editorSnippet(self, registryPath string, gate bool) string {
	args := []string{"--external-config", absPath(registryPath)}
	if gate {
		args = append(args, "--external-call")
	}
	server := map[string]any{"command": self, "args": args}
	mcp, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"colibri": server}}, "", "  ")
	server["type"] = "stdio"
	vs, _ := json.MarshalIndent(map[string]any{"servers": map[string]any{"colibri": server}}, "", "  ")
	return fmt.Sprintf("Claude Desktop and Cursor (mcpServers in their JSON file):\n%s\n\nVS Code (.vscode/mcp.json):\n%s\n\n"+
		"Or let colibri do it: colibri-mcp import --from EDITOR --write --apply\n", mcp, vs)
}

// selfPath is colibri's own executable, for the editor entry.
func selfPath() string {
	if p, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	return "colibri-mcp"
}

// transientBuild reports whether path is a binary of go run's: one Go
// deletes when the command exits (…/go-buildNNN/bNNN/exe/colibri-mcp), or
// one in Go's build cache (~/.cache/go-build/…/HASH-d/colibri-mcp), which
// the cache's trimming deletes. An editor entry naming it starts nothing,
// sooner or later.
func transientBuild(path string) bool {
	dir := filepath.Base(filepath.Dir(path))
	return (dir == "exe" || strings.HasSuffix(dir, "-d")) && strings.Contains(path, string(filepath.Separator)+"go-build")
}

// transientNote is the line said where an editor entry would name a
// binary of go run's.
const transientNote = "note: colibri runs from a temporary build of 'go run', which Go deletes: the entry below names it; build it first ('make build', 'go install ./cmd/colibri-mcp') and run that\n"

// installedDemo is the demo server installed beside colibri: make install's
// libexec/colibri-mcp/, or make build's bin/; "" when there is none.
func installedDemo() string {
	dir := filepath.Dir(selfPath())
	for _, p := range []string{
		filepath.Join(dir, "..", "libexec", "colibri-mcp", "demo-mcp-server"),
		filepath.Join(dir, "demo-mcp-server"),
	} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return filepath.Clean(p)
		}
	}
	return ""
}
