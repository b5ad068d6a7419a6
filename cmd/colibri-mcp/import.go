package main

// colibri-mcp import: an editor's MCP configuration into the registry
// (docs/import.md). This file reads the flags; internal/importcmd
// does the work.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/internal/clihelp"
	"github.com/colibri-mcp/colibri-mcp/internal/editorconf"
	"github.com/colibri-mcp/colibri-mcp/internal/importcmd"
	"github.com/colibri-mcp/colibri-mcp/internal/termview"
)

const importDescription = "Reads the MCP servers of Claude Desktop or Cursor (\"mcpServers\"), VS Code (\"servers\"),\n" +
	"Zed (\"context_servers\") or Codex ([mcp_servers.NAME] in config.toml), from FILE or from the\n" +
	"editor's usual place (--from), and prints the registry entries they become. Without --from,\n" +
	"the editor is told from FILE's content. --json prints them as a registry document; --write\n" +
	"merges them into the registry (--external-config): the old file is kept as FILE.bak, and a\n" +
	"name the registry has already is reported, never overwritten.\n\n" +
	"A literal value in env or headers whose name looks secret (*TOKEN*, *KEY*, *SECRET*,\n" +
	"*PASSWORD*, *AUTH*, …) becomes ${NAME} and is listed as \"moved to environment\": set NAME in\n" +
	"colibri's environment (provider.env for the FreeBSD service). Values are never printed;\n" +
	"--env-file F writes them into F (mode 0600), which --env-file F loads.\n\n" +
	"With --write and --from, --apply also rewrites the editor's file (kept as FILE.bak): the\n" +
	"imported servers removed, one \"colibri\" entry added that runs colibri with this registry;\n" +
	"--apply --each instead rewrites each imported server's own entry to run\n" +
	"colibri-mcp serve --only NAME, so that the editor still shows and toggles them one by one.\n" +
	"Without --external-call, those entries leave the call gate off (the tools are listed, not\n" +
	"called); import says so.\n" +
	"Without --external-config, --write writes ~/.config/colibri/external-mcp.json\n" +
	"($XDG_CONFIG_HOME/colibri/…), or the system registry for root.\n\n" +
	"Examples:\n" +
	"  colibri-mcp import --from cursor\n" +
	"  colibri-mcp import ~/.config/zed/settings.json --json > imported.json\n" +
	"  colibri-mcp --external-config ~/.config/colibri/external-mcp.json import --from codex --write\n" +
	"  colibri-mcp import --from claude --write --apply --env-file ~/.config/colibri/provider.env\n" +
	"  colibri-mcp import --from vscode --write --apply --each --external-call"

func importFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "from", Usage: "the `EDITOR`: " + strings.Join(editorconf.FormatNames(), ", ") + " (without FILE: read its usual file)"},
		&cli.BoolFlag{Name: "write", Usage: "merge the entries into the registry (--external-config), keeping the old file as FILE.bak"},
		&cli.BoolFlag{Name: "json", Usage: "print the entries as a registry document"},
		&cli.BoolFlag{Name: "apply", Usage: "with --write and --from: also rewrite the editor's file (kept as FILE.bak): the imported servers removed, one colibri entry added"},
		&cli.BoolFlag{Name: "each", Usage: "with --apply: rewrite each imported server's own entry to run colibri-mcp serve --only NAME instead of adding one colibri entry"},
		&cli.StringFlag{Name: "env-file", Usage: "with --write: write the secrets moved to ${NAME} as NAME=value lines into `F` (mode 0600; refused if others may read it)"},
	}
}

// importOptionsFrom reads import's arguments, checked.
func importOptionsFrom(cmd *cli.Command) (o importcmd.Options, err error) {
	o = importcmd.Options{File: cmd.Args().First(), Write: cmd.Bool("write"), JSON: cmd.Bool("json"), Apply: cmd.Bool("apply"), Each: cmd.Bool("each"), EnvFile: cmd.String("env-file")}
	if cmd.IsSet("from") {
		o.From, err = importcmd.ParseFrom(cmd.String("from"))
	}
	if err == nil {
		err = o.Check()
	}
	if err != nil {
		return importcmd.Options{}, usage(fmt.Errorf("import: %v (%s)", err, clihelp.HelpHint(cmd)))
	}
	return o, nil
}

func cmdImport(ctx context.Context, s *settings, o importcmd.Options, stdout, stderr io.Writer) error {
	env := lookupIn(s.environ)
	o.Getenv = func(k string) string { v, _ := env(k); return v }
	o.Registry, o.ExternalCall, o.Self = s.writePath(), s.externalCall, importcmd.Self()
	o.BeforeApply, _ = ctx.Value(beforeApplyKey{}).(func())
	// Names and values from another program's file.
	err := importcmd.Run(o, termview.Safe(stdout), termview.Safe(stderr))
	var ue *importcmd.UsageError
	switch {
	case errors.As(err, &ue):
		return usage(ue.Err)
	case err != nil:
		return failed(err)
	}
	return nil
}

// beforeApplyKey holds a function a test runs between reading the editor's
// file and rewriting it.
type beforeApplyKey struct{}
