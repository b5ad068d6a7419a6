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
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
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
	return pin.Open(s.pinFile, pin.Options{OnChange: func(kind pin.Kind, server, caps, name string, what []string) {
		m.ToolChange(server)
		log.Warn("a hosted server's definition differs from its pin (colibri-mcp pins diff SERVER shows it)",
			"server", server, string(kind), name, "changed", strings.Join(what, ","), "capabilities", caps,
			"pin_file", s.pinFile)
	}, OnFlag: func(kind pin.Kind, server, name string, f pin.Flag) {
		m.PinFlag(server, f.Flag)
		log.Warn("the pin scan flagged a hosted server's definition (colibri-mcp pins diff SERVER shows it)",
			"server", server, string(kind), name, "flag", f.Flag, "where", f.Where, "text", f.Text, "pin_file", s.pinFile)
	}})
}

const pinsDescription = "Pinned tool definitions: the first list a server gives is pinned in the pin file\n" +
	"(--pin-file); a tool that changes later, or a new one, is hidden and refused until\n" +
	"accepted (the registry's \"pin\": enforce, warn or off).\n\n" +
	"Examples:\n" +
	"  colibri-mcp pins\n" +
	"  colibri-mcp pins demo --json\n" +
	"  colibri-mcp pins diff demo\n" +
	"  colibri-mcp pins accept demo echo prompt:greet\n" +
	"  colibri-mcp pins reset demo\n" +
	"  colibri-mcp pins export --output pins.lock"

func pinsCommand(withSettings func(func(context.Context, *cli.Command, *settings) error) cli.ActionFunc, stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:        "pins",
		Usage:       "the pinned definitions: list them, diff, accept or reset a server's, export them as a lock",
		ArgsUsage:   "[SERVER] | diff SERVER | accept SERVER [NAME…] | reset SERVER | export [SERVER…] [--output FILE]",
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
				Usage:       "make the changed definitions of SERVER (or those NAMEd) the pins",
				ArgsUsage:   "SERVER [NAME…]",
				Description: "Accepts what `colibri-mcp pins diff SERVER` showed, and only that: a definition\nthe server listed since (or that no diff showed) is refused until a diff shows it.\nA NAME is tool:NAME, prompt:NAME, template:URITEMPLATE, resource:URI,\ninstructions, or a bare name, which takes every kind of that name.\nA lock (\"pin\": \"locked\", or a file of kind lock) is never changed: renew it\nwhere the servers are pinned and export it again (exit 2).\n\nExamples:\n  colibri-mcp pins accept demo\n  colibri-mcp pins accept demo echo add prompt:greet" + exitCodesHelp,
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
			{
				Name:        "export",
				Usage:       "write the accepted pins (of the SERVERs named, or all) as a lock: canonical JSON for review, version control and `\"pin\": \"locked\"`",
				ArgsUsage:   "[SERVER…]",
				Description: "The same pins always give the same bytes: keys sorted, two-space indent, no\ntimestamps. Only accepted definitions, with their review marks; for each server one\nset, each definition marked with the capabilities it needs. Ship it and run with\n--pin-file FILE and \"pin\": \"locked\" (docs/operations.md).\n\nExamples:\n  colibri-mcp check --probe && colibri-mcp pins export --output pins.lock\n  colibri-mcp pins export demo" + exitCodesHelp,
				Flags:       []cli.Flag{&cli.StringFlag{Name: "output", Usage: "write the lock to `FILE` (mode 0644, replaced atomically) instead of stdout"}},
				Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
					return cmdPinsExport(s, cmd.Args().Slice(), cmd.String("output"), stdout, stderr)
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
	var locked *pin.LockedError
	if errors.As(err, &nf) || errors.As(err, &unreviewed) || errors.As(err, &locked) {
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

// pinsOf is the run's pin file told what the registry says (a lock, the
// entries' fingerprints), when the registry can be read.
func pinsOf(s *settings) *pin.Store {
	store := openPins(s)
	if reg, err := registry.Load(s.configPath); err == nil {
		store.Configure(tools.PinConfig(reg))
	}
	return store
}

func cmdPins(s *settings, server string, asJSON bool, stdout, stderr io.Writer) error {
	stdout = termview.Safe(stdout) // tool names: others' words
	if err := pinsOf(s).List(stdout, server, registryNames(s), asJSON); err != nil {
		return pinErr(err, asJSON, stdout, stderr)
	}
	return nil
}

func cmdPinsDiff(ctx context.Context, s *settings, server string, asJSON bool, stdout, stderr io.Writer) error {
	ctx = reqctx.WithPrincipal(ctx, reqctx.Stdio)
	stdout, stderr = termview.Safe(stdout), termview.Safe(stderr)
	store := pinsOf(s)
	if err := store.Known(server, registryNames(s)); err != nil {
		return pinErr(err, asJSON, stdout, stderr)
	}
	unversioned := ""
	// Read the server's tools again (which records what changed), unless
	// it is no longer in the registry: then what was recorded is shown.
	if reg, err := registry.Load(s.configPath); err == nil && reg.Servers[server] != nil {
		unversioned = reg.Servers[server].UnversionedPackage()
		s.pins = store // the lists' verdicts under a lock are this store's, in memory
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
	if err := store.ShowDiff(stdout, server, asJSON, unversioned); err != nil {
		return pinErr(err, asJSON, stdout, stderr)
	}
	return nil
}

func cmdPinsAccept(s *settings, server string, names []string, stdout, stderr io.Writer) error {
	stdout = termview.Safe(stdout)
	if err := pinsOf(s).AcceptShown(stdout, server, registryNames(s), names); err != nil {
		return pinErr(err, false, stdout, stderr)
	}
	return nil
}

func cmdPinsReset(s *settings, server string, stdout, stderr io.Writer) error {
	if err := pinsOf(s).ResetShown(stdout, server, registryNames(s)); err != nil {
		return pinErr(err, false, stdout, stderr)
	}
	return nil
}

// pinStore is the run's pin file: the one a command opened already, else
// a new Store of it.
func (s *settings) pinStore() *pin.Store {
	if s.pins != nil {
		return s.pins
	}
	return openPins(s)
}

// cmdPinsExport writes the pins as a lock, to stdout or to output (mode
// 0644, atomically: a lock is shipped, and readable by all).
func cmdPinsExport(s *settings, servers []string, output string, stdout, stderr io.Writer) error {
	data, err := pinsOf(s).Export(servers...)
	if err != nil {
		return pinErr(err, false, stdout, stderr)
	}
	if output == "" || output == "-" {
		_, err := stdout.Write(data)
		return err
	}
	if err := pin.WriteLock(output, data); err != nil {
		return report(&failure.Error{Kind: failure.KindConfig, Err: fmt.Errorf("writing the lock %s: %w", output, err)}, false, stdout, stderr)
	}
	fmt.Fprintf(stderr, "colibri-mcp: wrote the lock %s (%d bytes): review it, commit it, and run with --pin-file pointing at it and \"pin\": \"locked\"\n", output, len(data))
	return nil
}
