package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/internal/clihelp"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/internal/principal"
	"github.com/colibri-mcp/colibri-mcp/internal/termview"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// openPins is the run's pin file (docs/cli.md#pinned-tool-definitions): each change
// first seen is counted and logged at warn.
func openPins(s *settings) *pin.Store {
	if s.pinErr != nil {
		return pin.Unusable(s.pinErr)
	}
	m, log := s.metrics, s.logger
	return pin.Open(s.pinFile, pin.Options{OnChange: func(server, caps, tool string, what []string) {
		m.ToolChange(server)
		log.Warn("a hosted tool's definition differs from its pin (colibri-mcp pins diff SERVER shows it)",
			"server", server, "tool", tool, "changed", strings.Join(what, ","), "capabilities", caps,
			"pin_file", s.pinFile)
	}})
}

const pinsDescription = "Pinned tool definitions: the first list a server gives is pinned in the pin file\n" +
	"(--pin-file); a tool that changes later, or a new one, is hidden and refused until\n" +
	"accepted (the registry's \"pin\": enforce, warn or off).\n\n" +
	"Examples:\n" +
	"  colibri-mcp pins\n" +
	"  colibri-mcp pins demo --json\n" +
	"  colibri-mcp pins diff demo\n" +
	"  colibri-mcp pins accept demo echo\n" +
	"  colibri-mcp pins reset demo"

func pinsCommand(withSettings func(func(context.Context, *cli.Command, *settings) error) cli.ActionFunc, stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:        "pins",
		Usage:       "the pinned tool definitions: list them, diff, accept or reset a server's",
		ArgsUsage:   "[SERVER] | diff SERVER | accept SERVER [TOOL…] | reset SERVER",
		Description: pinsDescription + exitCodesHelp,
		Flags:       []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the pins as JSON"}},
		Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
			if err := clihelp.WantArgs(cmd, 0, 1); err != nil {
				return err
			}
			return cmdPins(s, cmd.Args().First(), cmd.Bool("json"), stdout, stderr)
		}),
		Commands: []*cli.Command{
			{
				Name:        "diff",
				Usage:       "read SERVER's tools again and show what changed since they were pinned",
				ArgsUsage:   "SERVER",
				Description: "Examples:\n  colibri-mcp pins diff demo" + exitCodesHelp,
				Flags:       []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the changes as JSON"}},
				Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
					if err := clihelp.WantArgs(cmd, 1, 1); err != nil {
						return err
					}
					return cmdPinsDiff(ctx, s, cmd.Args().First(), cmd.Bool("json"), stdout, stderr)
				}),
			},
			{
				Name:        "accept",
				Usage:       "make the changed definitions of SERVER's tools (or of the TOOLs named) the pins",
				ArgsUsage:   "SERVER [TOOL…]",
				Description: "Accepts what `colibri-mcp pins diff SERVER` showed, and only that: a definition\nthe server listed since (or that no diff showed) is refused until a diff shows it.\n\nExamples:\n  colibri-mcp pins accept demo\n  colibri-mcp pins accept demo echo add" + exitCodesHelp,
				Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
					if err := clihelp.WantArgs(cmd, 1, 1<<20); err != nil {
						return err
					}
					return cmdPinsAccept(s, cmd.Args().First(), cmd.Args().Tail(), stdout, stderr)
				}),
			},
			{
				Name:        "reset",
				Usage:       "forget SERVER's pins: its next listing is pinned afresh",
				ArgsUsage:   "SERVER",
				Description: "Examples:\n  colibri-mcp pins reset demo" + exitCodesHelp,
				Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
					if err := clihelp.WantArgs(cmd, 1, 1); err != nil {
						return err
					}
					return cmdPinsReset(s, cmd.Args().First(), stdout, stderr)
				}),
			},
		},
	}
}

// pinErr reports a failure of the pin file: a config error (exit 2) naming
// it, or an unknown server or tool, or a change no diff showed (a usage
// error, with did-you-mean).
func pinErr(err error, asJSON bool, stdout, stderr io.Writer) error {
	var nf *pin.NotFoundError
	var unreviewed *pin.UnreviewedError
	if errors.As(err, &nf) || errors.As(err, &unreviewed) {
		return usage(err)
	}
	return report(&failure.Error{Kind: failure.KindConfig, Err: err}, asJSON, stdout, stderr)
}

// registryNames are the registry's servers, for the pins commands (nil
// when it cannot be read: the pin file alone then knows names).
func registryNames(s *settings) []string {
	if reg, err := registry.Load(s.configPath); err == nil {
		return reg.Names()
	}
	return nil
}

func cmdPins(s *settings, server string, asJSON bool, stdout, stderr io.Writer) error {
	stdout = termview.Safe(stdout) // tool names: others' words
	if err := openPins(s).List(stdout, server, registryNames(s), asJSON); err != nil {
		return pinErr(err, asJSON, stdout, stderr)
	}
	return nil
}

func cmdPinsDiff(ctx context.Context, s *settings, server string, asJSON bool, stdout, stderr io.Writer) error {
	ctx = principal.With(ctx, principal.Stdio)
	stdout, stderr = termview.Safe(stdout), termview.Safe(stderr)
	store := openPins(s)
	if err := store.Known(server, registryNames(s)); err != nil {
		return pinErr(err, asJSON, stdout, stderr)
	}
	// Read the server's tools again (which records what changed), unless
	// it is no longer in the registry: then what was recorded is shown.
	if reg, err := registry.Load(s.configPath); err == nil && reg.Servers[server] != nil {
		svc, h := newService(s)
		_, err := svc.ListTools(ctx, tools.ListToolsInput{Server: server, Detail: tools.DetailNames}, nil)
		h.Close()
		if err != nil && failure.KindOf(err) == failure.KindConfig {
			return report(err, asJSON, stdout, stderr)
		}
		if err != nil {
			fmt.Fprintf(stderr, "colibri-mcp: listing %s failed (%s); showing the changes recorded before\n", server, tools.Detail(err).Message)
		}
	}
	if err := store.ShowDiff(stdout, server, asJSON); err != nil {
		return pinErr(err, asJSON, stdout, stderr)
	}
	return nil
}

func cmdPinsAccept(s *settings, server string, names []string, stdout, stderr io.Writer) error {
	stdout = termview.Safe(stdout)
	if err := openPins(s).AcceptShown(stdout, server, registryNames(s), names); err != nil {
		return pinErr(err, false, stdout, stderr)
	}
	return nil
}

func cmdPinsReset(s *settings, server string, stdout, stderr io.Writer) error {
	if err := openPins(s).ResetShown(stdout, server, registryNames(s)); err != nil {
		return pinErr(err, false, stdout, stderr)
	}
	return nil
}
