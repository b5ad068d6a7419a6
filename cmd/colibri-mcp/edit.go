package main

// colibri-mcp init, add and remove: a registry of one's own without editing
// JSON by hand (docs/cli.md#a-registry-of-ones-own-init-add-remove).
// registry/regfile validates, keeps
// FILE.bak and replaces the file atomically; this file reads flags and
// prints.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/internal/clihelp"
	"github.com/colibri-mcp/colibri-mcp/internal/importcmd"
	"github.com/colibri-mcp/colibri-mcp/internal/termview"
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
			Flags: append([]cli.Flag{&cli.BoolFlag{Name: "force", Usage: "replace an existing registry (kept as FILE.bak)"}}, rootFlags()...),
			Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
				if err := clihelp.WantArgs(cmd, 0, 0); err != nil {
					return err
				}
				return cmdInit(s, cmd.Bool("force"), termview.Safe(stdout))
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
				"From the MCP Registry: add NAME --from-registry SERVER[@VERSION] [--package npm|pypi|remote] [--arg NAME=VALUE]…\n" +
				"The entry is validated as the registry is; a name that exists is refused unless\n" +
				"--replace. The registry is rewritten atomically (other entries' text untouched), the\n" +
				"old one kept as FILE.bak. Write secrets as ${NAME} (set NAME where colibri runs).\n\n" +
				"Examples:\n" +
				"  colibri-mcp add fs -- npx -y @modelcontextprotocol/server-filesystem ~/src\n" +
				"  colibri-mcp add gh --env 'GITHUB_TOKEN=${GITHUB_PAT}' -- github-mcp-server stdio\n" +
				"  colibri-mcp add docs --url https://example.com/mcp --bearer-token-env DOCS_TOKEN\n" +
				"  colibri-mcp add brave --from-registry io.github.brave/brave-search-mcp-server@2.1.3" + exitCodesHelp,
			Flags: append([]cli.Flag{
				&cli.StringSliceFlag{Name: "env", Usage: "`K=V` for the child's environment (repeat; ${NAME} reads colibri's)"},
				&cli.BoolFlag{Name: "persistent", Usage: "keep one warm session instead of a process per request"},
				&cli.StringFlag{Name: "description", Usage: "the `TEXT` the servers tool shows (one short sentence: what the server is for)"},
				&cli.StringFlag{Name: "cwd", Usage: "the command's working `DIR` (default: the registry's folder)"},
				&cli.IntFlag{Name: "spare", Usage: "keep `N` started processes ready (0 to 4), so that a request skips the start"},
				&cli.StringSliceFlag{Name: "pass-env", Usage: "pass colibri's variable `NAME` to the command as it is (repeat; globs: npm_config_*; not for secrets)"},
				&cli.BoolFlag{Name: "sandbox", Usage: "confine the command in colibri's Linux sandbox (what --read, --write, --no-net and --net grant, and nothing else)"},
				&cli.StringSliceFlag{Name: "read", Usage: "with the sandbox: let the command read `PATH` (repeat)"},
				&cli.StringSliceFlag{Name: "write", Usage: "with the sandbox: let the command read and write `PATH` (repeat)"},
				&cli.BoolFlag{Name: "no-net", Usage: "with the sandbox: no network at all"},
				&cli.StringSliceFlag{Name: "net", Usage: "with the sandbox: reach only `DEST` (a host, *.domain, an address or CIDR, :port; repeat)"},
				&cli.BoolFlag{Name: "replace", Usage: "replace a server of that name"},
				&cli.StringFlag{Name: "url", Usage: "a remote MCP server's `URL` instead of a command"},
				&cli.StringSliceFlag{Name: "header", Usage: "`K=V` sent with every request to --url (repeat)"},
				&cli.StringFlag{Name: "bearer-token-env", Usage: "send Authorization: Bearer with colibri's variable `NAME`"},
				&cli.BoolFlag{Name: "allow-http", Usage: "let --url be plain http beyond loopback (requests and any token travel in clear)"},
				&cli.BoolFlag{Name: "allow-private-network", Usage: "let --url's OAuth discovery reach private addresses"},
				rootFlags()[0], rootFlags()[1],
			}, fromRegistryFlags()...),
			Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
				if cmd.IsSet("from-registry") {
					return addFromRegistry(ctx, cmd, s, termview.Safe(stdout))
				}
				for _, f := range []string{"registry-url", "package", "arg", "accept-runtime-args"} {
					if cmd.IsSet(f) {
						return usage(fmt.Errorf("add: --%s is for --from-registry (%s)", f, clihelp.HelpHint(cmd)))
					}
				}
				name, entry, err := addEntry(cmd)
				if err != nil {
					return err
				}
				return cmdAdd(s, name, entry, cmd.Bool("replace"), termview.Safe(stdout))
			}),
		},
		{
			Name:          "remove",
			Usage:         "remove one server from the registry (kept in FILE.bak)",
			ArgsUsage:     "NAME",
			ShellComplete: servers,
			Description:   "Examples:\n  colibri-mcp remove demo\n  colibri-mcp remove --root /tmp/img demo" + exitCodesHelp,
			Flags:         rootFlags(),
			Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
				if err := clihelp.WantArgs(cmd, 1, 1); err != nil {
					return err
				}
				return cmdRemove(s, cmd.Args().First(), termview.Safe(stdout))
			}),
		},
	}
}

// addArgs are add's arguments and flags.
func addArgs(cmd *cli.Command) regfile.AddArgs {
	return regfile.AddArgs{Args: cmd.Args().Slice(), URL: cmd.String("url"),
		Env: cmd.StringSlice("env"), Headers: cmd.StringSlice("header"), BearerTokenEnv: cmd.String("bearer-token-env"), Persistent: cmd.Bool("persistent"),
		AllowHTTP: cmd.Bool("allow-http"), AllowPrivateNetwork: cmd.Bool("allow-private-network"),
		Description: cmd.String("description"), Cwd: cmd.String("cwd"), Spare: int(cmd.Int("spare")), PassEnv: cmd.StringSlice("pass-env"),
		Sandbox: cmd.Bool("sandbox"), Read: cmd.StringSlice("read"), Write: cmd.StringSlice("write"), NoNet: cmd.Bool("no-net"), Net: cmd.StringSlice("net"),
		NetList: importcmd.NetList()}
}

// addCommandArgs is where add stops reading flags: after NAME and COMMAND.
var addCommandArgs = 2

// addEntry reads add's arguments into an entry.
func addEntry(cmd *cli.Command) (string, *regfile.Entry, error) {
	name, e, err := regfile.NewEntry(addArgs(cmd))
	if err != nil {
		return "", nil, usage(fmt.Errorf("add: %v (%s)", err, clihelp.HelpHint(cmd)))
	}
	return name, e, nil
}

func cmdAdd(s *settings, name string, e *regfile.Entry, replace bool, w io.Writer) error {
	path := s.writePath()
	if err := regfile.LiteralSecrets(path, e); err != nil {
		return usage(fmt.Errorf("add: %w: nothing written", err))
	}
	replaced := replace && regfile.Holds(path, name)
	backup, err := regfile.Add(path, name, e, replace)
	if err != nil {
		return editError("add", err)
	}
	if im := s.image; im != nil {
		// The image's paths; its commands are checked by check --root.
		termview.Added(w, name, im.shown(path), shownBackup(im, backup), replaced, regfile.HintsFor(e))
		return nil
	}
	termview.Added(w, name, path, backup, replaced, regfile.HintsFor(e))
	return nil
}

func cmdRemove(s *settings, name string, w io.Writer) error {
	path := s.writePath()
	backup, err := regfile.Remove(path, name)
	if err != nil {
		return editError("remove", err)
	}
	if im := s.image; im != nil {
		path, backup = im.shown(path), shownBackup(im, backup)
	}
	fmt.Fprintf(w, "removed %q from %s (the previous registry is kept as %s)\n", name, path, backup)
	return nil
}

// editError maps a refused change: the person's mistake (a name, an
// invalid registry) is a usage error; a write that failed is a failure.
func editError(cmd string, err error) error {
	said, persons := regfile.Explain(cmd, err)
	if persons {
		return usage(said)
	}
	return failed(said)
}

// cmdInit writes the starter registry.
func cmdInit(s *settings, force bool, w io.Writer) error {
	path := s.writePath()
	demo := regfile.InstalledDemo(importcmd.Self())
	if s.image != nil {
		// The image's own demo server, where make install put it, never
		// the build host's.
		demo = ""
		if s.image.isExecutable(imageDemo) {
			demo = imageDemo
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return failed(fmt.Errorf("init: %w", err))
		}
	}
	doc, err := regfile.Starter(demo)
	if err != nil {
		return failed(fmt.Errorf("init: %w", err))
	}
	backup, err := regfile.Init(path, doc, force)
	switch {
	case errors.Is(err, regfile.ErrFileExists):
		return usage(fmt.Errorf("init: %s exists already: nothing written (--force replaces it, keeping it as %s.bak; 'colibri-mcp add' adds a server to it)", path, path))
	case err != nil:
		return failed(fmt.Errorf("init: %w", err))
	}
	if im := s.image; im != nil {
		termview.Initialized(w, im.shown(path), shownBackup(im, backup), demo)
		fmt.Fprintf(w, "check it with 'colibri-mcp check --root %s'\n", im.root)
		return nil
	}
	termview.Initialized(w, path, backup, demo)
	self := importcmd.Self()
	if importcmd.TransientBuild(self) {
		fmt.Fprint(w, importcmd.TransientNote)
	}
	fmt.Fprint(w, importcmd.Snippet(self, path, false, ""))
	// Import says it in its own words, naming the editor it read.
	fmt.Fprintln(w, "Or let colibri do it: colibri-mcp import --from EDITOR --write --apply")
	// The entries leave the gate off, as colibri does unasked: said, so
	// that an editor whose model cannot call a tool is not a mystery.
	fmt.Fprintln(w, initGateNote)
	return nil
}

// initGateNote is what init says under the editor entries it prints.
const initGateNote = `these entries leave the call gate off: the editor's model can list and describe the hosted tools but not call them; add "--external-call" to "args" to let it call them (docs/editors.md)`

// shownBackup is a backup's path in the image ("" stays "").
func shownBackup(im *image, backup string) string {
	if backup == "" {
		return ""
	}
	return im.shown(backup)
}
