package main

// Usage errors: one line on stderr, naming what was probably meant, with the
// help to read next, and nothing on stdout — which, for `serve`, is the MCP
// channel an editor parses (CONTRACT.md section 1).

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
	"github.com/colibri-mcp/colibri-mcp/internal/termview"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// commandNames are the visible commands of root, the candidates for a typo.
func commandNames(root *cli.Command) []string {
	var names []string
	for _, c := range root.Commands {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	return names
}

// unknownCommand is the error for a word that is not a command.
func unknownCommand(root *cli.Command, word string) error {
	if near := suggest.Closest(word, commandNames(root)); near != "" {
		return usage(fmt.Errorf("unknown command %q: did you mean %q? (see 'colibri-mcp %s --help')", word, near, near))
	}
	return usage(fmt.Errorf("unknown command %q (see 'colibri-mcp --help' for the commands)", word))
}

// helpHint is the help to read after a usage error of cmd.
func helpHint(cmd *cli.Command) string {
	return fmt.Sprintf("see '%s --help'", cmd.FullName())
}

// wantArgs refuses fewer than lo or more than hi positional arguments: an
// extra word is a mistake (a misplaced value, a stray quote), not noise.
func wantArgs(cmd *cli.Command, lo, hi int) error {
	n := cmd.NArg()
	var msg string
	switch {
	case n > hi && hi == 0:
		msg = fmt.Sprintf("%s takes no arguments, got %q", cmd.Name, cmd.Args().First())
	case n > hi:
		msg = fmt.Sprintf("%s takes %s, got %d arguments: %q is one too many", cmd.Name, cmd.ArgsUsage, n, cmd.Args().Get(hi))
	case n < lo:
		msg = fmt.Sprintf("%s needs %s, got %d arguments", cmd.Name, cmd.ArgsUsage, n)
	default:
		return nil
	}
	return usage(fmt.Errorf("%s (%s)", msg, helpHint(cmd)))
}

// setUsageErrors makes every command answer a flag it cannot parse with
// one line on stderr instead of its help text on stdout.
func setUsageErrors(cmd *cli.Command) {
	cmd.OnUsageError = onUsageError
	for _, c := range cmd.Commands {
		setUsageErrors(c)
	}
}

// rootUsageError is onUsageError for the root, which reads its flags up to
// the command: `colibri-mcp sevrers --json` fails on --json there, but the
// mistake to report is the word before it.
func rootUsageError(args []string) cli.OnUsageErrorFunc {
	return func(ctx context.Context, root *cli.Command, err error, sub bool) error {
		if w := strayWord(root, args); w != "" {
			return unknownCommand(root, w)
		}
		return onUsageError(ctx, root, err, sub)
	}
}

// strayWord is the first word of args that is neither a flag, nor a flag's
// value, nor a command; "" when there is none.
func strayWord(root *cli.Command, args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return ""
		}
		if name, ok := strings.CutPrefix(a, "-"); ok {
			name = strings.TrimLeft(name, "-")
			if strings.Contains(name, "=") {
				continue
			}
			f := slices.IndexFunc(root.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) })
			if f < 0 {
				return "" // an unknown flag: whether the next word is its value, nobody knows
			}
			if _, isBool := root.Flags[f].(*cli.BoolFlag); !isBool {
				i++ // its value
			}
			continue
		}
		if root.Command(a) == nil {
			return a
		}
		return ""
	}
	return ""
}

func onUsageError(_ context.Context, cmd *cli.Command, err error, _ bool) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		msg = fmt.Sprintf("unknown flag --%s", name)
		if near := suggest.Closest(name, flagNames(cmd)); near != "" {
			msg += fmt.Sprintf(": did you mean --%s?", near)
		}
	}
	where := ""
	if cmd.Root() != cmd {
		where = cmd.Name + ": "
	}
	return usage(fmt.Errorf("%s%s (%s)", where, msg, helpHint(cmd)))
}

// flagNames are the flags cmd accepts: its own, then the global ones.
func flagNames(cmd *cli.Command) []string {
	var names []string
	for _, f := range cmd.Flags {
		names = append(names, f.Names()...)
	}
	if root := cmd.Root(); root != cmd {
		for _, f := range root.Flags {
			names = append(names, f.Names()...)
		}
	}
	return append(names, "help")
}

// helpAction is `colibri-mcp help [COMMAND]`. urfave/cli's own help command
// exits 0 with nothing useful for a topic it does not know; this one names
// the closest command, as a typo anywhere else does.
func helpAction(ctx context.Context, cmd *cli.Command) error {
	root := cmd.Root()
	switch cmd.NArg() {
	case 0:
		return cli.ShowRootCommandHelp(root)
	case 1:
		topic := cmd.Args().First()
		if c := root.Command(topic); c != nil && !c.Hidden || topic == "completion" {
			return cli.ShowCommandHelp(ctx, root, topic)
		}
		return unknownCommand(root, topic)
	}
	return wantArgs(cmd, 0, 1)
}

// configureCompletion shows `completion` in the help, keeps it to the shells
// the project supports, and refuses a missing or unknown shell.
func configureCompletion(c *cli.Command) {
	c.Hidden = false
	c.Usage = "print a shell completion script: bash, zsh or fish"
	c.ArgsUsage = "bash|zsh|fish"
	c.Description = "Examples:\n" +
		"  source <(colibri-mcp completion bash)        # in ~/.bashrc\n" +
		"  source <(colibri-mcp completion zsh)         # in ~/.zshrc\n" +
		"  colibri-mcp completion fish > ~/.config/fish/completions/colibri-mcp.fish" + exitCodesHelp
	var shells []string
	for _, sub := range c.Commands {
		if sub.Name == "pwsh" { // Windows is not supported
			sub.Hidden = true
			continue
		}
		shells = append(shells, sub.Name)
	}
	c.Action = func(_ context.Context, cmd *cli.Command) error {
		if cmd.NArg() == 0 {
			return usage(fmt.Errorf("completion needs a shell: %s (%s)", strings.Join(shells, ", "), helpHint(cmd)))
		}
		word := cmd.Args().First()
		msg := fmt.Sprintf("completion: unknown shell %q", word)
		if near := suggest.Closest(word, shells); near != "" {
			msg += fmt.Sprintf(": did you mean %q?", near)
		}
		return usage(fmt.Errorf("%s (want %s; %s)", msg, strings.Join(shells, ", "), helpHint(cmd)))
	}
	setUsageErrors(c)
}

// unitPlaceholders name what a global flag's value is, so that --help shows
// `--timeout D` and `--max-procs N` rather than `string` (CONTRACT.md
// section 2). Kept apart from globalFlags so that adding a flag there stays a
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
}

// withUnits gives each flag of unitPlaceholders its placeholder in --help.
func withUnits(flags []cli.Flag) []cli.Flag {
	for _, f := range flags {
		ph, ok := unitPlaceholders[f.Names()[0]]
		if !ok {
			continue
		}
		if s, ok := f.(interface{ SetStringer(cli.FlagStringFunc) }); ok {
			s.SetStringer(func(f cli.Flag) string {
				return strings.Replace(cli.FlagStringer(f), " string\t", " "+ph+"\t", 1)
			})
		}
	}
	return flags
}

// parseBool reads a boolean variable the contract's way: on for 1, true or
// yes; off for 0, false, no or empty; anything else ("on", "enabled") is a
// configuration error rather than a silent off.
func parseBool(variable, value string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "1", "true", "yes":
		return true, nil
	case "0", "false", "no", "":
		return false, nil
	}
	return false, usage(fmt.Errorf("%s=%s: not understood: use 1, true or yes to turn it on; 0, false, no or empty to turn it off", variable, value))
}

// printVersion prints the version, the commit and the Go version.
func printVersion(cmd *cli.Command) {
	v, c := buildVersion(version, commit, debug.ReadBuildInfo)
	fmt.Fprintf(cmd.Root().Writer, "colibri-mcp %s (commit %s, %s)\n", v, c, runtime.Version())
}

// buildVersion is the Makefile's stamp when there is one, and otherwise what
// the Go toolchain recorded: the module version for `go install …@v1.2.3`,
// the VCS revision for a build from a checkout.
func buildVersion(version, commit string, read func() (*debug.BuildInfo, bool)) (string, string) {
	if version != "dev" {
		return version, commit
	}
	info, ok := read()
	if !ok {
		return version, commit
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		version = v
	}
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value[:min(len(s.Value), 12)]
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && commit != "unknown" {
		commit += "-dirty"
	}
	return version, commit
}

// completable reports whether a hosted tool's name may be offered as a
// completion: only the names MCP recommends ([A-Za-z0-9_.-], 1 to 128).
// The shells do not quote what they are offered: bash's compgen -W expands
// it ($(…) and `…` run in the user's shell on TAB), a ";" or a space would be
// inserted into the command line as it is, and a ":" splits off a
// description. A server chooses its tools' names, so the others are left out.
func completable(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for _, r := range name {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
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
			ctx = tools.WithPrincipal(ctx, tools.StdioPrincipal)
			out, err := svc.ListTools(ctx, tools.ListToolsInput{Server: cmd.Args().First(), Detail: tools.DetailNames}, nil)
			if err != nil || len(out.Servers) != 1 {
				return
			}
			for _, t := range out.Servers[0].Tools {
				if completable(t.Name) {
					fmt.Fprintln(w, t.Name)
				}
			}
		}
	}
}
