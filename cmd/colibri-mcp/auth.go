package main

// colibri-mcp auth login|status|logout SERVER: OAuth for a remote server
// whose "oauth" entry uses the authorization_code grant (docs/cli.md and docs/registry.md). internal/oauth does the work; this file reads the
// registry, finds the server and prints.

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/internal/clihelp"
	"github.com/colibri-mcp/colibri-mcp/internal/oauth"
	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
	"github.com/colibri-mcp/colibri-mcp/internal/termview"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

const authDescription = "A remote server whose registry entry has \"oauth\": {\"grant\": \"authorization_code\"}\n" +
	"needs one login in a browser; colibri then keeps its tokens (mode 0600) and refreshes them.\n" +
	"Tokens live in oauth.token_file, or STATE_DIR/oauth/SERVER.json (--state-dir: by default\n" +
	"$XDG_STATE_HOME/colibri-mcp, ~/.local/state/colibri-mcp, or /var/db/colibri for root).\n" +
	"A client_credentials server needs no login. See docs/oauth.md.\n\n" +
	"Examples:\n" +
	"  colibri-mcp auth login github\n" +
	"  colibri-mcp auth login github --open\n" +
	"  colibri-mcp auth status github --json\n" +
	"  colibri-mcp auth logout github"

// authCommand is `auth` and its three commands.
func authCommand(withSettings func(func(context.Context, *cli.Command, *settings) error) cli.ActionFunc, stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:        "auth",
		Usage:       "OAuth for a remote server: login, status, logout",
		ArgsUsage:   "login|status|logout SERVER",
		Description: authDescription + exitCodesHelp,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() == 0 {
				return usage(fmt.Errorf("auth needs a command: login, status or logout (%s)", clihelp.HelpHint(cmd)))
			}
			word := cmd.Args().First()
			msg := fmt.Sprintf("auth: unknown command %q", word)
			if near := suggest.Closest(word, []string{"login", "status", "logout"}); near != "" {
				msg += fmt.Sprintf(": did you mean %q?", near)
			}
			return usage(fmt.Errorf("%s (%s)", msg, clihelp.HelpHint(cmd)))
		},
		Commands: []*cli.Command{
			{
				Name:      "login",
				Usage:     "log in to SERVER in a browser (authorization code, PKCE, loopback redirect) and save its tokens",
				ArgsUsage: "SERVER",
				Description: "Prints the authorization URL on stderr and waits for the browser's redirect to\n" +
					"http://127.0.0.1:PORT/callback. --open also opens the URL with xdg-open (open on macOS).\n" +
					"An authorization server that approves without a person (it answers colibri's own\n" +
					"request with the redirect at once) needs no browser.\n\n" +
					"Examples:\n" +
					"  colibri-mcp auth login github\n" +
					"  colibri-mcp auth login github --open --wait 10m" + exitCodesHelp,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "open", Usage: "open the authorization URL in a browser (xdg-open); otherwise only print it"},
					&cli.StringFlag{Name: "wait", Usage: "how long to wait for the browser's redirect: `D`, a Go duration or integer milliseconds", Value: "5m"},
				},
				Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
					if err := clihelp.WantArgs(cmd, 1, 1); err != nil {
						return err
					}
					wait, err := parseDuration(cmd.String("wait"))
					if err != nil {
						return usage(fmt.Errorf("--wait: %v (%s)", err, clihelp.HelpHint(cmd)))
					}
					return cmdAuthLogin(ctx, s, cmd.Args().First(), oauth.LoginOptions{OpenBrowser: cmd.Bool("open"), Wait: wait}, stdout, stderr)
				}),
			},
			{
				Name:      "status",
				Usage:     "show whether SERVER is logged in: token file, expiry, scopes (never a token)",
				ArgsUsage: "SERVER",
				Description: "Reads the token file only; nothing is sent. Exit code 1 when not logged in.\n\n" +
					"Examples:\n" +
					"  colibri-mcp auth status github\n" +
					"  colibri-mcp auth status github --json" + exitCodesHelp,
				Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the status as JSON"}},
				Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
					if err := clihelp.WantArgs(cmd, 1, 1); err != nil {
						return err
					}
					return cmdAuthStatus(s, cmd.Args().First(), cmd.Bool("json"), stdout)
				}),
			},
			{
				Name:      "logout",
				Usage:     "forget SERVER's tokens (delete its token file)",
				ArgsUsage: "SERVER",
				Description: "A colibri that is running keeps the access token it holds until it expires.\n\n" +
					"Examples:\n" +
					"  colibri-mcp auth logout github" + exitCodesHelp,
				Action: withSettings(func(ctx context.Context, cmd *cli.Command, s *settings) error {
					if err := clihelp.WantArgs(cmd, 1, 1); err != nil {
						return err
					}
					return cmdAuthLogout(s, cmd.Args().First(), stdout)
				}),
			},
		},
	}
}

// oauthOptions are the handlers' options for this run: colibri's own
// environment for ${NAME}, HOME and XDG_STATE_HOME; the per-phase timeout
// for each request to an authorization server.
func oauthOptions(s *settings) oauth.Options {
	return oauth.Options{Logger: s.logger, Timeout: s.timeout, Getenv: lookupIn(s.environ), Dir: s.state.Join("oauth")}
}

// authState refuses a server whose token file would be in a state folder
// that cannot be used (exit 2, the folder's words), before any login.
func authState(s *settings, srv *registry.Server) error {
	if s.state.Err != nil && srv.OAuth != nil && srv.OAuth.TokenFile == "" {
		return usage(fmt.Errorf("server %q: its token file: %w", srv.Name, s.state.Err))
	}
	return nil
}

// authError maps internal/oauth's errors to exit codes: a server the
// command does not apply to, or a bad oauth entry, is exit 2; a login that
// ran and failed is exit 1.
func authError(err error) error {
	if oauth.IsUsage(err) {
		return usage(err)
	}
	return failed(err)
}

func cmdAuthLogin(ctx context.Context, s *settings, name string, lo oauth.LoginOptions, stdout, stderr io.Writer) error {
	srv, err := oauth.FindServer(s.configPath, name)
	if err != nil {
		return authError(err)
	}
	if err := authState(s, srv); err != nil {
		return err
	}
	lo.Options = oauthOptions(s)
	lo.Stderr = termview.Safe(stderr) // the URL comes from the authorization server
	st, err := oauth.Login(ctx, srv, lo)
	if err != nil {
		return authError(err)
	}
	termview.LoggedIn(stdout, st)
	return nil
}

func cmdAuthStatus(s *settings, name string, asJSON bool, stdout io.Writer) error {
	srv, err := oauth.FindServer(s.configPath, name)
	if err != nil {
		return authError(err)
	}
	if err := authState(s, srv); err != nil {
		return err
	}
	st, err := oauth.GetStatus(srv, oauthOptions(s))
	if err != nil {
		return authError(err)
	}
	if stdout = termview.Safe(stdout); asJSON {
		termview.JSON(stdout, st)
	} else {
		termview.AuthStatus(stdout, st)
	}
	if !st.LoggedIn {
		return silent(exitFailed)
	}
	return nil
}

func cmdAuthLogout(s *settings, name string, stdout io.Writer) error {
	srv, err := oauth.FindServer(s.configPath, name)
	if err != nil {
		return authError(err)
	}
	if err := authState(s, srv); err != nil {
		return err
	}
	path, removed, err := oauth.Logout(srv, oauthOptions(s))
	if err != nil {
		return authError(err)
	}
	termview.LoggedOut(stdout, name, path, removed)
	return nil
}
