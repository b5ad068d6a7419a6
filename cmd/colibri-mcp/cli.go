package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/clihelp"
	"github.com/colibri-mcp/colibri-mcp/internal/envfile"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/health"
	"github.com/colibri-mcp/colibri-mcp/internal/httpserve"
	"github.com/colibri-mcp/colibri-mcp/internal/instance"
	"github.com/colibri-mcp/colibri-mcp/internal/oauth"
	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/internal/proc"
	"github.com/colibri-mcp/colibri-mcp/internal/statedir"
	"github.com/colibri-mcp/colibri-mcp/internal/termview"
	"github.com/colibri-mcp/colibri-mcp/jail"
	"github.com/colibri-mcp/colibri-mcp/metrics"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/registry/regfile"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// run is the whole program, minus the process: arguments, standard streams
// and environment come in, an error (mapped to an exit code) goes out.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string) error {
	// withSettings is every command's way in: settings first (a bad one is a
	// usage error before anything runs), then the command itself.
	withSettings := func(f func(context.Context, *cli.Command, *settings) error) cli.ActionFunc {
		return func(ctx context.Context, cmd *cli.Command) error {
			s, err := readSettings(ctx, cmd, environ)
			if err != nil {
				return err
			}
			return f(ctx, cmd, s)
		}
	}
	serveAction := withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
		return serve(ctx, s, stdin, stdout, stderr)
	})
	root := &cli.Command{
		Name:  "colibri-mcp",
		Usage: "one trusted, confined, observable door to many MCP servers",
		Description: "colibri-mcp is an MCP server that hosts the MCP servers of a JSON registry: local\n" +
			"commands over stdio, and remote servers over HTTP (\"url\" entries).\n" +
			"Without a command it serves MCP over stdio, as editors expect.\n\n" +
			"Examples:\n" +
			"  colibri-mcp servers\n" +
			"  colibri-mcp check --probe\n" +
			"  colibri-mcp --external-call call demo echo --args '{\"message\":\"hi\"}'\n" +
			"  colibri-mcp help call\n\n" +
			"The options of the service (--http, --token-file, --session-timeout, --metrics-addr) are\n" +
			"under 'colibri-mcp serve --help'." + exitCodesHelp,
		Version:   version,
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		// colibri's own help command (below) refuses topics it does not know.
		HideHelpCommand: true,
		Flags:           clihelp.WithUnits(clihelp.HideFlags(globalFlags(), serveOnlyFlags), unitPlaceholders),
		ExitErrHandler:  func(context.Context, *cli.Command, error) {}, // exit codes are main's
		// No command serves (what editors run); any other word is a typo,
		// never a silent serve that would wait on the terminal forever.
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return clihelp.UnknownCommand(cmd, cmd.Args().First())
			}
			return serveAction(ctx, cmd)
		},
		EnableShellCompletion:           true,
		ConfigureShellCompletionCommand: clihelp.Completion(exitCodesHelp),
		Commands: append(append([]*cli.Command{
			{
				Name:  "serve",
				Usage: "serve MCP over stdio (the default), or over Streamable HTTP with --http",
				Description: "Stdout carries MCP only; logs go to stderr.\n\n" +
					"Examples:\n" +
					"  colibri-mcp serve\n" +
					"  colibri-mcp serve --only github\n" +
					"  colibri-mcp serve --http 127.0.0.1:8750 --token-file /usr/local/etc/colibri/tokens" + exitCodesHelp,
				Flags: clihelp.WithUnits(clihelp.OnlyFlags(globalFlags(), serveOnlyFlags), unitPlaceholders),
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if err := clihelp.WantArgs(cmd, 0, 0); err != nil {
						return err
					}
					return serveAction(ctx, cmd)
				},
			},
			{
				Name:  "servers",
				Usage: "show the registry, as the servers tool does",
				Description: "Examples:\n" +
					"  colibri-mcp servers\n" +
					"  colibri-mcp --external-config ./external-mcp.json servers --json" + exitCodesHelp,
				Flags: append([]cli.Flag{jsonFlag()}, rootFlags()...),
				Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
					if err := clihelp.WantArgs(cmd, 0, 0); err != nil {
						return err
					}
					return cmdServers(ctx, s, cmd.Bool("json"), stdout, stderr)
				}),
			},
			{
				Name:          "list-tools",
				Usage:         "start (or connect to) the server, or every server, and list its tools",
				ArgsUsage:     "[SERVER]",
				ShellComplete: completeNames(environ, false),
				Description: "Examples:\n" +
					"  colibri-mcp list-tools demo\n" +
					"  colibri-mcp list-tools --json" + exitCodesHelp,
				Flags: []cli.Flag{jsonFlag()},
				Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
					if err := clihelp.WantArgs(cmd, 0, 1); err != nil {
						return err
					}
					return cmdListTools(ctx, s, cmd.Args().First(), cmd.Bool("json"), stdout, stderr)
				}),
			},
			{
				Name:          "call",
				Usage:         "call a hosted tool (needs --external-call or COLIBRI_MCP_EXTERNAL_CALL=1)",
				ArgsUsage:     "SERVER TOOL",
				ShellComplete: completeNames(environ, true),
				Description: "Examples:\n" +
					"  colibri-mcp --external-call call demo echo --args '{\"message\":\"hi\"}'\n" +
					"  echo '{\"a\":2,\"b\":40}' | colibri-mcp --external-call call demo add --args-file - --output structured" + exitCodesHelp,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "args", Usage: "the tool's arguments, a `JSON` object (default: {})"},
					&cli.StringFlag{Name: "args-file", Usage: "read the arguments from `PATH` (- for stdin) instead of --args"},
					&cli.StringFlag{Name: "output", Usage: "`FORMAT`: text (the text contents), structured (the hosted structuredContent) or result (the whole CallToolResult)", Value: "text"},
					&cli.BoolFlag{Name: "json", Usage: "the same as --output structured"},
				},
				Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
					if err := clihelp.WantArgs(cmd, 2, 2); err != nil {
						return err
					}
					opts, err := callOptionsFrom(cmd, stdin)
					if err != nil {
						return err
					}
					return cmdCall(ctx, s, cmd.Args().Get(0), cmd.Args().Get(1), opts, stdout, stderr)
				}),
			},
			{
				Name:          "describe",
				Usage:         "show one hosted tool: its description, annotations and input schema",
				ArgsUsage:     "SERVER TOOL",
				ShellComplete: completeNames(environ, true),
				Description: "Examples:\n" +
					"  colibri-mcp describe demo add\n" +
					"  colibri-mcp describe demo add --json" + exitCodesHelp,
				Flags: []cli.Flag{jsonFlag()},
				Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
					if err := clihelp.WantArgs(cmd, 2, 2); err != nil {
						return err
					}
					return cmdDescribe(ctx, s, cmd.Args().Get(0), cmd.Args().Get(1), cmd.Bool("json"), stdout, stderr)
				}),
			},
			{
				Name:  "check",
				Usage: "validate the registry; --probe also starts (or connects to) each server and lists its tools",
				Description: "Examples:\n" +
					"  colibri-mcp check\n" +
					"  colibri-mcp check --probe\n" +
					"  colibri-mcp check --probe --capabilities sampling,roots,elicitation" + exitCodesHelp,
				Flags: append([]cli.Flag{
					&cli.BoolFlag{Name: "probe", Usage: "start (or connect to) each server and list its tools, printing each server's line as it finishes"},
					&cli.StringFlag{Name: "capabilities", Usage: "with --probe, list each server first as a caller offering these client capabilities would see it (a comma-separated `LIST` of sampling, roots, elicitation), then as one offering none, pinning both lists: a staging machine pins the tools a server offers only to such callers"},
					jsonFlag(),
				}, rootFlags()...),
				Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
					if err := clihelp.WantArgs(cmd, 0, 0); err != nil {
						return err
					}
					caps, err := probeCapabilities(cmd.String("capabilities"))
					if err != nil {
						return usage(fmt.Errorf("check: %w (%s)", err, clihelp.HelpHint(cmd)))
					}
					if len(caps) > 0 && !cmd.Bool("probe") {
						return usage(fmt.Errorf("check: --capabilities says what to list the servers with: give --probe too (%s)", clihelp.HelpHint(cmd)))
					}
					if s.image != nil {
						if cmd.Bool("probe") {
							return usage(fmt.Errorf("check: --probe with --root: an image's servers do not run on the build host; check the image's paths without --probe, and probe on the image (%s)", clihelp.HelpHint(cmd)))
						}
						return checkImage(s, cmd.Bool("json"), termview.Safe(stdout))
					}
					return cmdCheck(ctx, s, cmd.Bool("probe"), caps, cmd.Bool("json"), stdout)
				}),
			},
			{
				Name:        "import",
				Usage:       "turn an editor's MCP configuration into registry entries; --write merges them",
				ArgsUsage:   "[FILE]",
				Description: importDescription + exitCodesHelp,
				Flags:       importFlags(),
				Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
					if err := clihelp.WantArgs(cmd, 0, 1); err != nil {
						return err
					}
					opts, err := importOptionsFrom(cmd)
					if err != nil {
						return err
					}
					return cmdImport(ctx, s, opts, stdout, stderr)
				}),
			},
			authCommand(withSettings, stdout, stderr),
			pinsCommand(withSettings, stdout, stderr),
			auditCommand(stdin, stdout, stderr),
		}, editCommands(withSettings, stdout, completeNames(environ, false))...), []*cli.Command{
			{
				Name:        "help",
				Usage:       "show the commands, or one command's help",
				ArgsUsage:   "[COMMAND]",
				Description: "Examples:\n  colibri-mcp help\n  colibri-mcp help call" + exitCodesHelp,
				Action:      clihelp.HelpAction,
			},
		}...),
	}
	clihelp.SetUsageErrors(root)
	if len(args) > 0 {
		root.OnUsageError = clihelp.RootUsageError(args[1:])
	}
	// urfave/cli's printer is a package variable; tests run run() in
	// parallel, so it is set once.
	setVersionPrinter.Do(func() { cli.VersionPrinter = printVersion })
	return root.Run(ctx, args)
}

var setVersionPrinter sync.Once

// exitCodesHelp ends every command's help: scripts branch on these
// (docs/cli.md#exit-codes).
const exitCodesHelp = "\n\n" +
	"Exit codes:\n" +
	"  0  success\n" +
	"  1  the operation ran and failed (a hosted tool returned isError, a server could not be reached, check found problems)\n" +
	"  2  usage or configuration error (bad flag, unknown command, invalid registry, call gate off, denied by the policy, a tool changed since pinned, refused HTTP setup)"

func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print the tool's structuredContent as JSON"}
}

// globalFlags are the settings of docs/registry.md#settings. Each reads its
// variable; a flag on the command line wins. Durations and the gate are read
// by readSettings, which knows the contract's own syntax for them.
func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "external-config", Usage: "the registry `PATH` (default: ~/.config/colibri/external-mcp.json when it exists and colibri is not root, else " + registry.DefaultPath + ")", Sources: cli.EnvVars("COLIBRI_MCP_EXTERNAL_CONFIG")},
		&cli.StringFlag{Name: "env-file", Usage: "load NAME=value lines (no shell) from `PATH` into colibri's environment first, for the registry's ${NAME}; refused when others may read it", Sources: cli.EnvVars("COLIBRI_MCP_ENV_FILE")},
		&cli.BoolFlag{Name: "external-call", Usage: "allow calling hosted tools (COLIBRI_MCP_EXTERNAL_CALL=1)"},
		&cli.BoolFlag{Name: "aggregate", Usage: "also offer every hosted tool as a tool of colibri's own, PREFIX__TOOL (COLIBRI_MCP_AGGREGATE=1)"},
		&cli.StringFlag{Name: "timeout", Usage: "per-phase timeout: integer milliseconds or a Go duration", Value: "30000", Sources: cli.EnvVars("COLIBRI_MCP_TIMEOUT")},
		&cli.StringFlag{Name: "http", Usage: "serve Streamable HTTP on `ADDR` instead of stdio", Sources: cli.EnvVars("COLIBRI_MCP_HTTP")},
		&cli.StringFlag{Name: "only", Usage: "offer the one hosted server `NAME` as colibri's own: its tools, prompts, resources and the rest, under their own names"},
		&cli.StringFlag{Name: "token-file", Usage: "bearer tokens for HTTP, one per line", Sources: cli.EnvVars("COLIBRI_MCP_TOKEN_FILE")},
		&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error", Value: "info", Sources: cli.EnvVars("COLIBRI_MCP_LOG_LEVEL")},
		&cli.StringFlag{Name: "log-format", Usage: "text or json (always to stderr)", Value: "text", Sources: cli.EnvVars("COLIBRI_MCP_LOG_FORMAT")},
		&cli.StringFlag{Name: "max-procs", Usage: "hosted processes alive at once", Value: "32", Sources: cli.EnvVars("COLIBRI_MCP_MAX_PROCS")},
		&cli.StringFlag{Name: "max-result-bytes", Usage: "largest hosted message accepted", Value: "16777216", Sources: cli.EnvVars("COLIBRI_MCP_MAX_RESULT_BYTES")},
		&cli.StringFlag{Name: "retries", Usage: "attempts in all for a phase that failed transiently", Value: "3", Sources: cli.EnvVars("COLIBRI_MCP_RETRIES")},
		&cli.StringFlag{Name: "session-timeout", Usage: "HTTP mode: close an MCP session unused this long: integer milliseconds or a Go duration", Value: "30m", Sources: cli.EnvVars("COLIBRI_MCP_SESSION_TIMEOUT")},
		&cli.StringFlag{Name: "retry-backoff", Usage: "first back-off, doubling: integer milliseconds or a Go duration", Value: "1000", Sources: cli.EnvVars("COLIBRI_MCP_RETRY_BACKOFF")},
		&cli.StringFlag{Name: "audit-log", Usage: "append one JSON line per hosted call to this file (- for stderr); reopened on SIGHUP", Sources: cli.EnvVars("COLIBRI_MCP_AUDIT_LOG")},
		&cli.StringFlag{Name: "audit-key-file", Usage: "the HMAC key of the audit log's argument digests", Sources: cli.EnvVars("COLIBRI_MCP_AUDIT_KEY_FILE")},
		&cli.StringSliceFlag{Name: "allowed-host", Usage: "HTTP mode: a `NAME` a request's Host or Origin may give besides the served address (a proxy's public name; repeatable)", Sources: cli.EnvVars("COLIBRI_MCP_ALLOWED_HOSTS")},
		&cli.StringFlag{Name: "metrics-addr", Usage: "serve Prometheus metrics at http://ADDR/metrics (beyond loopback only with --token-file)", Sources: cli.EnvVars("COLIBRI_MCP_METRICS_ADDR")},
		&cli.StringFlag{Name: "pin-file", Usage: "the `PATH` of the pinned tool definitions (default: STATE_DIR/pins.json)", Sources: cli.EnvVars("COLIBRI_MCP_PIN_FILE")},
		&cli.StringFlag{Name: "instance", Usage: "this instance's `NAME` in audit and log lines, and the start of its HTTP session ids, for several instances behind one address (default: the host name)", Sources: cli.EnvVars("COLIBRI_MCP_INSTANCE")},
		&cli.StringFlag{Name: "state-dir", Usage: "the one `DIR` colibri writes at run time: pins, OAuth tokens, the sandboxes' homes (default: $XDG_STATE_HOME/colibri-mcp, ~/.local/state/colibri-mcp; " + statedir.RootDefault + " as root)", Sources: cli.EnvVars("COLIBRI_MCP_STATE_DIR")},
	}
}

// serveOnlyFlags mean something to serve alone: they are listed under
// `serve --help`, and kept out of the other commands' help (colibri-mcp
// --http ADDR, with no command, still serves).
var serveOnlyFlags = []string{"http", "only", "token-file", "session-timeout", "allowed-host", "metrics-addr"}

// settings are the parsed, checked configuration of one run.
type settings struct {
	configPath     string
	configNamed    bool     // --external-config or its variable was given
	configTried    []string // the default paths looked at, when not named
	root           bool     // colibri runs as root: the system registry is its own
	externalCall   bool
	aggregate      bool
	timeout        time.Duration
	httpAddr       string
	only           string // serve --only NAME
	tokenFile      string
	logger         *slog.Logger
	maxProcs       int
	maxResultBytes int64
	retries        int
	retryBackoff   time.Duration
	sessionTimeout time.Duration
	jailPriv       jail.Priv
	jailHelper     string
	environ        []string
	auditLog       string
	auditKeyFile   string
	metricsAddr    string
	allowedHosts   []string // --allowed-host
	pinFile        string   // "" when there is no place for it (pinErr says why)
	envFile        string   // --env-file / COLIBRI_MCP_ENV_FILE, loaded before anything else
	pinErr         error
	state          *statedir.Dir    // --state-dir, or the default; state.Err when it cannot be used
	pinsInState    bool             // no --pin-file: the pin file is STATE_DIR/pins.json
	instance       string           // --instance, or the host name
	sealer         *instance.Sealer // --instance's, one per run: seals MRTR requestState, SSE event ids, cursors (docs/scaling.md)
	image          *image           // --root's image, else nil
	logLevel       slog.Level       // the logger's, for serve's (with instance=)
	logFormat      string
	logTo          io.Writer
	pins           *pin.Store // the pin file opened already, if it was (pinStore)

	// Opened for the run (openAudit, serve), not parsed.
	audit    *audit.Writer
	digester *audit.Digester
	metrics  *metrics.Metrics
	bulk     *bulk.Table      // serve's face's (stdio or HTTP), else nil
	health   *health.Registry // serve's: the registry's state for the operator, else nil
	serving  bool             // serve: long-lived, so spare processes are kept
	// loadRegistry is the registry as the tools read it (newService).
	loadRegistry func() (*registry.Registry, error)
}

func readSettings(ctx context.Context, cmd *cli.Command, environ []string) (*settings, error) {
	// The env file first: its variables are colibri's own from here on.
	// With --root it is the image's, read where the image runs: ${NAME}s
	// are reported, never expanded from the build host.
	if f := cmd.Root().String("env-file"); f != "" && !(hasFlag(cmd, "root") && cmd.String("root") != "") { // import has an --env-file of its own
		vars, err := envfile.Load(f)
		if err != nil {
			return nil, usage(fmt.Errorf("--env-file / COLIBRI_MCP_ENV_FILE: %w", err))
		}
		environ = append(slices.Clip(environ), vars...)
	}
	env := lookupIn(environ)
	s := &settings{
		environ:      environ,
		envFile:      cmd.Root().String("env-file"),
		configPath:   cmd.String("external-config"),
		httpAddr:     clihelp.FlagString(cmd, "http"),
		only:         clihelp.FlagString(cmd, "only"),
		tokenFile:    clihelp.FlagString(cmd, "token-file"),
		jailHelper:   jail.DefaultHelper,
		auditLog:     cmd.String("audit-log"),
		auditKeyFile: cmd.String("audit-key-file"),
		metricsAddr:  clihelp.FlagString(cmd, "metrics-addr"),
		pinFile:      cmd.String("pin-file"),
	}
	var err error
	if s.instance, err = instanceName(cmd.String("instance")); err != nil {
		return nil, usage(err)
	}
	s.sealer = instance.New(s.instance)
	if err := applyRoot(cmd, s); err != nil { // an image's state folder and pin file are the image's
		return nil, err
	}
	if s.state == nil {
		s.state = statedir.Resolve(cmd.String("state-dir"), os.Geteuid(), env)
	}
	for _, name := range cmd.StringSlice("allowed-host") {
		name = strings.TrimSpace(name)
		if err := httpserve.CheckAllowedHost(name); err != nil {
			return nil, usage(err)
		}
		s.allowedHosts = append(s.allowedHosts, name)
	}
	if s.pinFile == "" {
		s.pinFile, s.pinErr, s.pinsInState = s.state.Join("pins.json"), s.state.Err, true
	}
	s.configNamed = s.configPath != ""
	s.root = asRoot(ctx)
	if !s.configNamed {
		s.configPath, s.configTried = registry.Default(s.root, s.getenv, func(p string) bool {
			_, err := os.Stat(p)
			return err == nil
		})
	}
	// The gate: the flag wins when given; otherwise the variable.
	if s.externalCall, err = boolSetting(cmd, env, "external-call", "COLIBRI_MCP_EXTERNAL_CALL"); err != nil {
		return nil, err
	}
	if s.aggregate, err = boolSetting(cmd, env, "aggregate", "COLIBRI_MCP_AGGREGATE"); err != nil {
		return nil, err
	}
	if s.timeout, err = setting(cmd, "timeout", "COLIBRI_MCP_TIMEOUT", parseDuration); err != nil {
		return nil, err
	}
	if s.retryBackoff, err = setting(cmd, "retry-backoff", "COLIBRI_MCP_RETRY_BACKOFF", parseDuration); err != nil {
		return nil, err
	}
	if s.sessionTimeout, err = setting(cmd, "session-timeout", "COLIBRI_MCP_SESSION_TIMEOUT", parseDuration); err != nil {
		return nil, err
	}
	if s.maxProcs, err = setting(cmd, "max-procs", "COLIBRI_MCP_MAX_PROCS", parsePositive[int]); err != nil {
		return nil, err
	}
	if s.maxResultBytes, err = setting(cmd, "max-result-bytes", "COLIBRI_MCP_MAX_RESULT_BYTES", parsePositive[int64]); err != nil {
		return nil, err
	}
	if s.retries, err = setting(cmd, "retries", "COLIBRI_MCP_RETRIES", parsePositive[int]); err != nil {
		return nil, err
	}
	v, _ := env("COLIBRI_JAIL_PRIV_MODE")
	if s.jailPriv, err = jail.ParsePriv(v); err != nil {
		return nil, usage(err)
	}
	if v, ok := env("COLIBRI_JAIL_HELPER"); ok && v != "" {
		s.jailHelper = v
	}
	level := cmd.String("log-level")
	if _, named := env("COLIBRI_MCP_LOG_LEVEL"); !cmd.IsSet("log-level") && !named && cmd.Name != "serve" && cmd != cmd.Root() {
		// A one-shot command prints its answer; the host's life (a warm
		// session started, closed) is noise there. Warnings still show.
		level = "warn"
	}
	if s.logger, err = newLogger(level, cmd.String("log-format"), cmd.Root().ErrWriter); err != nil {
		return nil, err
	}
	s.logLevel.UnmarshalText([]byte(level)) // newLogger checked it
	s.logFormat, s.logTo = cmd.String("log-format"), cmd.Root().ErrWriter
	return s, nil
}

// boolSetting is a boolean flag, or when it is not given its variable,
// which must say yes or no in words colibri understands.
func boolSetting(cmd *cli.Command, env func(string) (string, bool), flag, variable string) (bool, error) {
	if cmd.IsSet(flag) {
		return cmd.Bool(flag), nil
	}
	if v, ok := env(variable); ok {
		b, err := parseBool(variable, v)
		if err != nil {
			return false, usage(err)
		}
		return b, nil
	}
	return false, nil
}

// setting parses one flag's value, naming the flag and its variable when the
// value is wrong.
func setting[T any](cmd *cli.Command, flag, variable string, parse func(string) (T, error)) (T, error) {
	v, err := parse(clihelp.FlagString(cmd, flag))
	if err != nil {
		var zero T
		return zero, usage(fmt.Errorf("--%s / %s: %w", flag, variable, err))
	}
	return v, nil
}

func newLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usage(fmt.Errorf("--log-level / COLIBRI_MCP_LOG_LEVEL: %q: must be debug, info, warn or error", level))
	}
	if h, ok := newLogHandler(format, l, w); ok {
		return slog.New(h), nil
	}
	return nil, usage(fmt.Errorf("--log-format / COLIBRI_MCP_LOG_FORMAT: %q: must be text or json", format))
}

// getenv is one of colibri's variables ("" when unset).
func (s *settings) getenv(name string) string {
	v, _ := lookupIn(s.environ)(name)
	return v
}

// writePath is the registry that init, add, remove and import --write
// change: the one named, else the per-user one (the system one for root).
func (s *settings) writePath() string {
	if s.configNamed {
		return s.configPath
	}
	return regfile.WritePath(s.root, s.getenv)
}

// rootKey lets a test run colibri as if it were root, or not.
type rootKey struct{}

func asRoot(ctx context.Context) bool {
	if v, ok := ctx.Value(rootKey{}).(bool); ok {
		return v
	}
	return os.Geteuid() == 0
}

// newService wires the registry, the host and the tools for one run.
func newService(s *settings) (*tools.Service, *host.Host) {
	loader := &registry.Loader{Path: s.configPath, Tried: s.configTried}
	s.loadRegistry = loader.Load
	configShown := s.configPath
	if s.image != nil {
		s.loadRegistry = func() (*registry.Registry, error) { return loadImageRegistry(s) }
		configShown = s.image.registry
	}
	if s.health != nil {
		s.loadRegistry = func() (*registry.Registry, error) {
			reg, err := loader.Load()
			if err == nil {
				// A registry that needs an unusable state folder is not
				// ready either, though every entry that does not need it
				// is served (docs/operations.md).
				s.health.ObserveState(s.state.Problem(reg, s.pinsInState))
			}
			s.health.Observe(err) // the operator's log keeps the whole error
			return reg, err
		}
	}
	if s.httpAddr != "" {
		// Callers over HTTP never learn the server's folders.
		load := s.loadRegistry
		s.loadRegistry = func() (*registry.Registry, error) {
			reg, err := load()
			return reg, registry.PublicError(err)
		}
		configShown = filepath.Base(s.configPath)
	}
	opts := host.Options{
		Logger:         s.logger,
		Version:        version,
		Timeout:        s.timeout,
		MaxProcs:       s.maxProcs,
		MaxResultBytes: s.maxResultBytes,
		Retries:        s.retries,
		RetryBackoff:   s.retryBackoff,
		JailPriv:       s.jailPriv,
		JailHelper:     s.jailHelper,
		Environ:        func() []string { return s.environ },
		OAuth:          oauth.NewHandlers(oauthOptions(s)).Handler,
		Bulk:           s.bulk,
		NoSpares:       !s.serving, // a one-shot command ends before a spare would serve
	}
	if proc.IsReaper() { // main's harden made colibri the reaper of what it hosts
		opts.ReapOrphans = proc.ReapAdopted
	}
	sandboxWiring(&opts, s)
	if m := s.metrics; m != nil {
		opts.OnRequest = m.ClientOperation
		opts.OnRetry = func(server string, phase failure.Phase) { m.Retry(server, string(phase)) }
		opts.OnEgressRefused, opts.OnEgressConnection = m.EgressRefused, m.EgressConnection
	}
	h := host.New(opts)
	svc := tools.New(tools.Options{
		Registry:     s.loadRegistry,
		ConfigPath:   configShown,
		Host:         h,
		ExternalCall: s.externalCall,
		Aggregate:    s.aggregate,
		Logger:       s.logger,
		Audit:        s.audit,
		Digester:     s.digester,
		Metrics:      s.metrics,
		Bulk:         s.bulk,
		Pins:         s.pinStore(),
		HideFolders:  s.httpAddr != "", // callers over HTTP never learn the server's folders
		Instance:     s.instance,
		Sealer:       s.sealer,
		StateProblem: func(reg *registry.Registry, srv *registry.Server) error {
			if s.state.Err == nil {
				return nil
			}
			if what := statedir.Needs(reg, srv, s.pinsInState); what != "" {
				return fmt.Errorf("%w (needed for %s)", s.state.Err, what)
			}
			return nil
		},
	})
	return svc, h
}

// instanceName is --instance checked (letters, digits, '.', '_' and '-',
// at most 64, starting with a letter or digit: it begins HTTP session ids
// and audit chains), or with none given the host name made such a name.
func instanceName(given string) (string, error) {
	if given != "" {
		if !validInstance(given) {
			return "", fmt.Errorf("--instance / COLIBRI_MCP_INSTANCE %q: want at most 64 letters, digits, '.', '_' or '-', starting with a letter or digit", given)
		}
		return given, nil
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "colibri", nil
	}
	b := []byte(host)
	for i, c := range b {
		if !instanceByte(c) {
			b[i] = '-'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	if name := string(b); validInstance(name) {
		return name, nil
	}
	return "colibri", nil
}

func validInstance(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '.' || s[0] == '_' || s[0] == '-' {
		return false
	}
	for i := range len(s) {
		if !instanceByte(s[i]) {
			return false
		}
	}
	return true
}

func instanceByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}
