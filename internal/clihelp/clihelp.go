// Package clihelp makes colibri's urfave/cli command tree answer a
// mistake the way docs/cli.md#mistakes wants: one line (on stderr, through
// the error returned), naming what was probably meant, with the help to
// read next, and nothing on stdout — which, for serve, is the MCP channel
// an editor parses. It also holds the help command that refuses a topic it
// does not know, the completion command kept to bash, zsh and fish, the
// unit placeholders of --help, and the version a build reports. Every error
// it returns is a usage error (exit 2).
//
//	clihelp.SetUsageErrors(root)
//	root.OnUsageError = clihelp.RootUsageError(args[1:])
//	if err := clihelp.WantArgs(cmd, 1, 1); err != nil { // "remove needs NAME, got 0 arguments (see …)"
//		return err
//	}
package clihelp

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
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

// UnknownCommand is the error for a word that is not a command.
func UnknownCommand(root *cli.Command, word string) error {
	if near := suggest.Closest(word, commandNames(root)); near != "" {
		return fmt.Errorf("unknown command %q: did you mean %q? (see 'colibri-mcp %s --help')", word, near, near)
	}
	return fmt.Errorf("unknown command %q (see 'colibri-mcp --help' for the commands)", word)
}

// HelpHint is the help to read after a usage error of cmd.
func HelpHint(cmd *cli.Command) string {
	return fmt.Sprintf("see '%s --help'", cmd.FullName())
}

// WantArgs refuses fewer than lo or more than hi positional arguments: an
// extra word is a mistake (a misplaced value, a stray quote), not noise.
func WantArgs(cmd *cli.Command, lo, hi int) error {
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
	return fmt.Errorf("%s (%s)", msg, HelpHint(cmd))
}

// SetUsageErrors makes every command answer a flag it cannot parse with
// one line on stderr instead of its help text on stdout.
func SetUsageErrors(cmd *cli.Command) {
	cmd.OnUsageError = onUsageError
	for _, c := range cmd.Commands {
		SetUsageErrors(c)
	}
}

// RootUsageError is onUsageError for the root, which reads its flags up to
// the command: `colibri-mcp sevrers --json` fails on --json there, but the
// mistake to report is the word before it.
func RootUsageError(args []string) cli.OnUsageErrorFunc {
	return func(ctx context.Context, root *cli.Command, err error, sub bool) error {
		if w := strayWord(root, args); w != "" {
			return UnknownCommand(root, w)
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
	return fmt.Errorf("%s%s (%s)", where, msg, HelpHint(cmd))
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

// HelpAction is `colibri-mcp help [COMMAND]`. urfave/cli's own help command
// exits 0 with nothing useful for a topic it does not know; this one names
// the closest command, as a typo anywhere else does.
func HelpAction(ctx context.Context, cmd *cli.Command) error {
	root := cmd.Root()
	switch cmd.NArg() {
	case 0:
		return cli.ShowRootCommandHelp(root)
	case 1:
		topic := cmd.Args().First()
		if c := root.Command(topic); c != nil && !c.Hidden || topic == "completion" {
			return cli.ShowCommandHelp(ctx, root, topic)
		}
		return UnknownCommand(root, topic)
	}
	return WantArgs(cmd, 0, 1)
}

// Completion configures urfave/cli's completion command: shown in the help
// (help ends its description), kept to the shells the project supports,
// and refusing a missing or unknown shell.
func Completion(help string) func(*cli.Command) {
	return func(c *cli.Command) { configureCompletion(c, help) }
}

func configureCompletion(c *cli.Command, help string) {
	c.Hidden = false
	c.Usage = "print a shell completion script: bash, zsh or fish"
	c.ArgsUsage = "bash|zsh|fish"
	c.Description = "Examples:\n" +
		"  source <(colibri-mcp completion bash)        # in ~/.bashrc\n" +
		"  source <(colibri-mcp completion zsh)         # in ~/.zshrc\n" +
		"  colibri-mcp completion fish > ~/.config/fish/completions/colibri-mcp.fish" + help
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
			return fmt.Errorf("completion needs a shell: %s (%s)", strings.Join(shells, ", "), HelpHint(cmd))
		}
		word := cmd.Args().First()
		msg := fmt.Sprintf("completion: unknown shell %q", word)
		if near := suggest.Closest(word, shells); near != "" {
			msg += fmt.Sprintf(": did you mean %q?", near)
		}
		return fmt.Errorf("%s (want %s; %s)", msg, strings.Join(shells, ", "), HelpHint(cmd))
	}
	SetUsageErrors(c)
}

// WithUnits gives each flag named in placeholders its placeholder in --help
// (`--timeout D` rather than `--timeout string`).
func WithUnits(flags []cli.Flag, placeholders map[string]string) []cli.Flag {
	for _, f := range flags {
		ph, ok := placeholders[f.Names()[0]]
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

// BuildVersion is the Makefile's stamp when there is one, and otherwise what
// the Go toolchain recorded: the module version for `go install …@v1.2.3`,
// the VCS revision for a build from a checkout.
func BuildVersion(version, commit string, read func() (*debug.BuildInfo, bool)) (string, string) {
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

// Completable reports whether a hosted tool's name may be offered as a
// completion: only the names MCP recommends ([A-Za-z0-9_.-], 1 to 128).
// The shells do not quote what they are offered: bash's compgen -W expands
// it ($(…) and `…` run in the user's shell on TAB), a ";" or a space would be
// inserted into the command line as it is, and a ":" splits off a
// description. A server chooses its tools' names, so the others are left out.
func Completable(name string) bool {
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

// HideFlags hides the string flags named in names from the help of the
// command that holds them (a command of their own lists them).
func HideFlags(flags []cli.Flag, names []string) []cli.Flag {
	for _, f := range flags {
		if sf, ok := f.(*cli.StringFlag); ok && slices.Contains(names, sf.Name) {
			sf.Hidden = true
		}
	}
	return flags
}

// OnlyFlags are the flags named in names.
func OnlyFlags(flags []cli.Flag, names []string) []cli.Flag {
	return slices.DeleteFunc(flags, func(f cli.Flag) bool { return !slices.Contains(names, f.Names()[0]) })
}

// FlagString is a flag's value from the innermost command that was given
// it (serve declares root's serve-only flags again, and `colibri-mcp --http
// ADDR serve` gives root's), else the value cmd sees (its variable or
// default).
func FlagString(cmd *cli.Command, name string) string {
	for _, c := range cmd.Lineage() {
		for _, f := range c.Flags {
			if slices.Contains(f.Names(), name) && f.IsSet() {
				return c.String(name)
			}
		}
	}
	return cmd.String(name)
}
