package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/internal/principal"
	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// openPins is the run's pin file (CONTRACT.md section 13): each change
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
			if err := wantArgs(cmd, 0, 1); err != nil {
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
					if err := wantArgs(cmd, 1, 1); err != nil {
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
					if err := wantArgs(cmd, 1, 1<<20); err != nil {
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
					if err := wantArgs(cmd, 1, 1); err != nil {
						return err
					}
					return cmdPinsReset(s, cmd.Args().First(), stdout, stderr)
				}),
			},
		},
	}
}

// pinErr reports a failure of the pin file: a config error (exit 2) naming
// it, or an unknown server or tool (a usage error, with did-you-mean).
func pinErr(err error, asJSON bool, stdout, stderr io.Writer) error {
	var nf *pin.NotFoundError
	if errors.As(err, &nf) {
		return usage(err)
	}
	return report(&failure.Error{Kind: failure.KindConfig, Err: err}, asJSON, stdout, stderr)
}

// pinServer checks that server is one the registry or the pin file knows,
// with did-you-mean among both.
func pinServer(s *settings, store *pin.Store, server string) error {
	known, err := store.Servers()
	if err != nil {
		return err
	}
	if slices.Contains(known, server) {
		return nil
	}
	if reg, err := registry.Load(s.configPath); err == nil {
		if _, ok := reg.Servers[server]; ok {
			return nil
		}
		known = append(known, reg.Names()...)
	}
	return &pin.NotFoundError{What: "server", Name: server, Near: suggest.Closest(server, known), Known: known}
}

func cmdPins(s *settings, server string, asJSON bool, stdout, stderr io.Writer) error {
	stdout = safe(stdout) // tool names: others' words
	store := openPins(s)
	report, err := store.Report(server)
	var nf *pin.NotFoundError
	if errors.As(err, &nf) && pinServer(s, store, server) == nil {
		report, err = []pin.ServerPins{}, nil // in the registry, not listed yet
	}
	if err != nil {
		return pinErr(err, asJSON, stdout, stderr)
	}
	if asJSON {
		writeJSON(stdout, map[string]any{"pin_file": store.Path(), "servers": report})
		return nil
	}
	pin.WriteReport(stdout, store.Path(), report)
	return nil
}

func cmdPinsDiff(ctx context.Context, s *settings, server string, asJSON bool, stdout, stderr io.Writer) error {
	ctx = principal.With(ctx, principal.Stdio)
	stdout, stderr = safe(stdout), safe(stderr)
	store := openPins(s)
	if err := pinServer(s, store, server); err != nil {
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
	diffs, err := store.Diff(server)
	var nf *pin.NotFoundError
	if errors.As(err, &nf) {
		diffs, err = []pin.ToolDiff{}, nil // in the registry, never pinned: nothing changed
	}
	if err != nil {
		return pinErr(err, asJSON, stdout, stderr)
	}
	if asJSON {
		writeJSON(stdout, map[string]any{"server": server, "changes": diffs})
	} else {
		pin.WriteDiff(stdout, server, diffs)
		if len(diffs) > 0 {
			fmt.Fprintf(stdout, "\naccept with: colibri-mcp pins accept %s [TOOL…]\n", server)
		}
	}
	// What was shown, and only that, is what pins accept will accept.
	if err := store.Reviewed(server, diffs); err != nil {
		return pinErr(err, asJSON, stdout, stderr)
	}
	return nil
}

func cmdPinsAccept(s *settings, server string, names []string, stdout, stderr io.Writer) error {
	stdout = safe(stdout)
	store := openPins(s)
	if err := pinServer(s, store, server); err != nil {
		return pinErr(err, false, stdout, stderr)
	}
	accepted, err := store.AcceptReviewed(server, names...)
	var unreviewed *pin.UnreviewedError
	if errors.As(err, &unreviewed) {
		if len(accepted) > 0 {
			fmt.Fprintf(stdout, "%s: accepted %s\n", server, strings.Join(accepted, ", "))
		}
		return usage(err)
	}
	switch {
	case errors.Is(err, pin.ErrNothingPending):
		fmt.Fprintf(stdout, "%s: nothing to accept (colibri-mcp pins diff %s reads its tools again)\n", server, server)
		return nil
	case err != nil:
		var nf *pin.NotFoundError
		if errors.As(err, &nf) && nf.What == "server" {
			// In the registry, never pinned.
			fmt.Fprintf(stdout, "%s: nothing to accept: its tools were never pinned\n", server)
			return nil
		}
		return pinErr(err, false, stdout, stderr)
	}
	fmt.Fprintf(stdout, "%s: accepted %s\n", server, strings.Join(accepted, ", "))
	return nil
}

func cmdPinsReset(s *settings, server string, stdout, stderr io.Writer) error {
	store := openPins(s)
	if err := store.Reset(server); err != nil {
		var nf *pin.NotFoundError
		if errors.As(err, &nf) {
			if err := pinServer(s, store, server); err != nil {
				return pinErr(err, false, stdout, stderr)
			}
			fmt.Fprintf(stdout, "%s: no pins to forget\n", server)
			return nil
		}
		return pinErr(err, false, stdout, stderr)
	}
	fmt.Fprintf(stdout, "%s: pins forgotten; its next listing is pinned afresh\n", server)
	return nil
}
