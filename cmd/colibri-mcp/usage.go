package main

// Usage errors, help and completion: internal/clihelp; here what is
// colibri's own (the flags' placeholders, the registry's names to complete).

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/internal/clihelp"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/termview"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// unitPlaceholders name what a global flag's value is, so that --help shows
// `--timeout D` and `--max-procs N` rather than `string` (docs/cli.md#settings). Kept
// apart from globalFlags so that adding a flag there stays a
// one-line change.
var unitPlaceholders = map[string]string{
	"external-config":  "PATH",
	"timeout":          "D",
	"token-file":       "PATH",
	"log-level":        "L",
	"log-format":       "F",
	"max-procs":        "N",
	"max-result-bytes": "N",
	"retries":          "N",
	"retry-backoff":    "D",
	"session-timeout":  "D",
	"audit-log":        "PATH",
	"audit-key-file":   "PATH",
	"metrics-addr":     "ADDR",
	"allowed-host":     "NAME",
}

// printVersion prints the version, the commit and the Go version.
func printVersion(cmd *cli.Command) {
	v, c := clihelp.BuildVersion(version, commit, debug.ReadBuildInfo)
	fmt.Fprintf(cmd.Root().Writer, "colibri-mcp %s (commit %s, %s)\n", v, c, runtime.Version())
}

// completeNames completes a command's arguments from the registry: the
// server names for the first, and with withTools that server's tool names
// for the second (listing them starts the server, as list-tools does). A
// word typed so far that starts with "-" gets the flags, as urfave/cli
// does by default.
func completeNames(environ []string, withTools bool) cli.ShellCompleteFunc {
	return func(ctx context.Context, cmd *cli.Command) {
		if args := cmd.Args().Slice(); len(args) > 0 && strings.HasPrefix(args[len(args)-1], "-") {
			cli.DefaultCompleteWithFlags(ctx, cmd)
			return
		}
		s, err := readSettings(ctx, cmd, environ)
		if err != nil {
			return
		}
		s.logger = slog.New(slog.DiscardHandler) // a completion prints names, nothing else
		w := cmd.Root().Writer
		svc, h := newService(s)
		defer h.Close()
		reg, err := s.loadRegistry()
		if err != nil {
			return
		}
		switch cmd.NArg() {
		case 0:
			for _, n := range reg.Names() {
				fmt.Fprintln(w, termview.SafeText(n))
			}
		case 1:
			if !withTools || reg.Servers[cmd.Args().First()] == nil {
				return
			}
			ctx = reqctx.WithPrincipal(ctx, reqctx.Stdio)
			out, err := svc.ListTools(ctx, tools.ListToolsInput{Server: cmd.Args().First(), Detail: tools.DetailNames}, nil)
			if err != nil || len(out.Servers) != 1 {
				return
			}
			for _, t := range out.Servers[0].Tools {
				if clihelp.Completable(t.Name) {
					fmt.Fprintln(w, t.Name)
				}
			}
		}
	}
}
