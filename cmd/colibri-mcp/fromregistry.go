package main

// colibri-mcp add NAME --from-registry SERVER[@VERSION]: an entry that runs
// one exact release of a server the MCP Registry lists (docs/registry.md,
// "From the MCP Registry"). internal/mcpregistry reads the registry and
// plans the entry; this file reads flags and prints.

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/internal/clihelp"
	"github.com/colibri-mcp/colibri-mcp/internal/mcpregistry"
	"github.com/colibri-mcp/colibri-mcp/internal/termview"
	"github.com/colibri-mcp/colibri-mcp/registry/regfile"
)

// entryName is a registry entry's name (docs/registry.md).
var entryName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// fromRegistryFlags are add's flags for --from-registry.
func fromRegistryFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "from-registry", Usage: "the MCP Registry's `SERVER[@VERSION]` (io.github.owner/server): an entry that runs that exact version (the latest without @VERSION)"},
		&cli.StringFlag{Name: "registry-url", Usage: "the MCP Registry's `URL` (default " + mcpregistry.DefaultURL + ", or COLIBRI_MCP_REGISTRY_URL)"},
		&cli.StringFlag{Name: "package", Usage: "with --from-registry: run it as `npm|pypi|remote` (default: npm, then pypi, then remote)"},
		&cli.StringSliceFlag{Name: "arg", Usage: "with --from-registry: `NAME=VALUE` for an argument the server takes (repeat)"},
		&cli.BoolFlag{Name: "accept-runtime-args", Usage: "with --from-registry: write the options for npx or uvx themselves that the server asks for"},
	}
}

// addFromRegistry plans the entry of add NAME --from-registry and writes it.
func addFromRegistry(ctx context.Context, cmd *cli.Command, s *settings, w io.Writer) error {
	bad := func(format string, a ...any) error {
		return usage(fmt.Errorf("add: "+format+" (%s)", append(a, clihelp.HelpHint(cmd))...))
	}
	args := cmd.Args().Slice()
	if len(args) != 1 {
		return bad("--from-registry takes NAME only: the command comes from the registry")
	}
	for _, f := range []string{"url", "header", "bearer-token-env", "env"} {
		if cmd.IsSet(f) {
			return bad("--%s is not for --from-registry: the entry is the registry's (edit it after, or use add NAME -- COMMAND)", f)
		}
	}
	server, version, hasAt := strings.Cut(cmd.String("from-registry"), "@")
	if hasAt && version == "" {
		return bad("--from-registry %s@: give a version after @, or none for the latest", server)
	}
	base := cmd.String("registry-url")
	if base == "" {
		base = s.getenv("COLIBRI_MCP_REGISTRY_URL")
	}
	if base == "" {
		base = mcpregistry.DefaultURL
	}
	if err := mcpregistry.CheckURL(base); err != nil {
		return usage(fmt.Errorf("add: --registry-url / COLIBRI_MCP_REGISTRY_URL: %w", err))
	}
	choice := mcpregistry.Choice{Package: cmd.String("package"), AcceptRuntimeArgs: cmd.Bool("accept-runtime-args")}
	for _, kv := range cmd.StringSlice("arg") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimLeft(k, "-") == "" {
			return bad("--arg %q: want NAME=VALUE", kv)
		}
		if choice.Args == nil {
			choice.Args = map[string][]string{}
		}
		choice.Args[k] = append(choice.Args[k], homeExpanded(v, s.getenv("HOME")))
	}
	name := args[0]
	// Checked before the registry is asked: a bad name costs no request.
	if !entryName.MatchString(name) {
		return bad("NAME %q: letters, digits, _ . -, starting with a letter or digit, at most 64", name)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	c := &mcpregistry.Client{BaseURL: base}
	found, err := c.Server(ctx, server, version)
	if err != nil {
		return failed(fmt.Errorf("add: nothing written: %w", err))
	}
	plan, err := mcpregistry.PlanFor(found, choice)
	if err != nil {
		return usage(fmt.Errorf("add: nothing written: %w", err))
	}
	if cmd.Bool("persistent") && plan.Entry.URL == "" {
		plan.Entry.Lifecycle = "persistent"
	}
	// add's other flags apply as they do to a command of one's own: a
	// --sandbox dropped here would leave the server unconfined.
	if err := regfile.Extras(addArgs(cmd), plan.Entry); err != nil {
		return bad("nothing written: %v", err)
	}
	path := s.writePath()
	replaced := cmd.Bool("replace") && regfile.Holds(path, name)
	backup, err := regfile.Add(path, name, plan.Entry, cmd.Bool("replace"))
	if err != nil {
		return editError("add", err)
	}
	termview.AddedFromRegistry(w, termview.FromRegistry{Name: name, Path: path, Backup: backup, Replaced: replaced, EnvFile: s.envFile, Plan: plan,
		Hints: regfile.HintsFor(plan.Entry)})
	return nil
}

// homeExpanded is an --arg value with a leading ~ or ~/ made home's, as
// the shell does for a word of its own but not after NAME= (--arg
// target_dir=~/src): the registry passes args as they are, so a literal ~
// would reach the server, which reads it as a folder named "~".
func homeExpanded(v, home string) string {
	if home == "" {
		return v
	}
	if v == "~" {
		return filepath.Clean(home)
	}
	if rest, ok := strings.CutPrefix(v, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return v
}
