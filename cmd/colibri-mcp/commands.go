package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/clihelp"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/gcpace"
	"github.com/colibri-mcp/colibri-mcp/internal/health"
	"github.com/colibri-mcp/colibri-mcp/internal/launch"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
	"github.com/colibri-mcp/colibri-mcp/internal/termview"

	"github.com/colibri-mcp/colibri-mcp/internal/httpserve"
	"github.com/colibri-mcp/colibri-mcp/internal/stdioserve"
	"github.com/colibri-mcp/colibri-mcp/metrics"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// watchRegistry reads the registry now and between requests until the
// returned stop is called (health.Watch).
func watchRegistry(ctx context.Context, s *settings) (stop func()) {
	return health.Watch(ctx, func() { s.loadRegistry() })
}

// serve runs colibri's MCP server over stdio (or HTTP with --http) until the
// client leaves or a signal arrives, then tears every hosted process down.
func serve(ctx context.Context, s *settings, stdin io.Reader, stdout, stderr io.Writer) error {
	// Several instances behind one address share a log pipeline: each line
	// says whose it is (last, after the request id).
	if h, ok := newInstanceLogHandler(s.logFormat, s.logLevel, s.logTo, s.instance); ok {
		s.logger = slog.New(h)
	}
	if s.only != "" && s.aggregate {
		return usage(errors.New("serve: --only offers one hosted server as colibri's own, --aggregate every server's tools beside colibri's: choose one (see 'colibri-mcp serve --help')"))
	}
	if s.httpAddr != "" {
		// Over HTTP a session id is a credential: keep it out of info logs.
		s.logger = slog.New(httpserve.QuietSessionIDs(s.logger.Handler()))
	}
	closeAudit, err := openAudit(s, stderr)
	if err != nil {
		return err
	}
	defer closeAudit() // after the host: calls that finish while it closes are still recorded
	if s.metricsAddr != "" {
		v, c := clihelp.BuildVersion(version, commit, debug.ReadBuildInfo) // as --version says them
		s.metrics = metrics.New(metrics.Options{Version: v, Commit: c})
		if w := s.audit; w != nil {
			s.metrics.SetAuditChain(func() int64 { return w.Head().Lines })
		}
	}
	// Large strings cross either face by reference (internal/bulk): the
	// face lowers every message it writes.
	s.bulk = bulk.New(bulk.DefaultMin)
	// A small heap is collected at 32 MiB, unless the operator set GOGC
	// (internal/gcpace); under a GOMEMLIMIT too.
	defer gcpace.Serve(lookupIn(s.environ))()
	s.serving = true
	// A colibri killed with SIGKILL could not remove its requests' ephemeral
	// jails: the next one does (FreeBSD; jail.Stale).
	removeStaleJails(ctx, s)
	s.health = health.New(health.Options{Logger: s.logger, Valid: s.metrics.RegistryValid, Invalid: s.metrics.RegistryError})
	svc, h := newService(s)
	defer h.Close()
	if err := checkOnly(s); err != nil {
		return err
	}
	defer svc.Close()             // first: its background reads of hosted lists use the host
	defer watchRegistry(ctx, s)() // a warning now if it is bad, and whenever it turns bad
	for _, w := range hardening {
		s.logger.Warn(w)
	}
	var onHUP hupActions
	if s.audit != nil && s.auditLog != "-" {
		onHUP = append(onHUP, hupAction{What: "audit log reopened (" + s.auditLog + ")", Do: func() error {
			if err := s.audit.Reopen(); err != nil {
				return err
			}
			if warning := s.audit.Warning(); warning != "" {
				s.logger.Warn(warning)
			}
			return nil
		}})
	}
	if s.metrics != nil {
		mctx, stopMetrics := context.WithCancel(ctx)
		ms, wait, err := startMetrics(mctx, s, h)
		if err != nil {
			stopMetrics()
			return err
		}
		defer wait()
		defer stopMetrics()
		if s.tokenFile != "" {
			onHUP = append(onHUP, hupAction{What: "token file reloaded for metrics (" + s.tokenFile + ")", Do: ms.ReloadTokens})
		}
	}
	if s.httpAddr != "" {
		s.logger.Info("starting colibri-mcp", "version", version, "registry", s.configPath, "external_call", s.externalCall, "aggregate", s.aggregate)
		return serveHTTP(ctx, s, svc, onHUP)
	}
	defer onHUP.Watch(s.logger)()
	if f, ok := stdin.(*os.File); ok {
		// The process's own stdin: read through the poller, so that the
		// goroutine a line is handed to runs on the reading thread at once
		// (stdioserve.Pollable; docs/benchmarks.md, "The serve --only
		// hop"). (One CPU for colibri's Go code, GOMAXPROCS=1, made a warm
		// call faster too, but kept a ping behind a hostile server's flood
		// for 10-20 ms instead of 0.3: not done.)
		var keep []*os.File // what must keep its mode: stdout, stderr
		for _, w := range []io.Writer{stdout, stderr} {
			if wf, ok := w.(*os.File); ok {
				keep = append(keep, wf)
			}
		}
		in, restore := stdioserve.Pollable(f, keep...)
		defer restore()
		stdin = in
	}
	s.logger.Info("serving MCP over stdio", "version", version, "registry", s.configPath, "external_call", s.externalCall, "aggregate", s.aggregate)
	if termview.IsTerminal(stdin) {
		// Someone typed colibri-mcp in a shell: say why nothing happens.
		fmt.Fprintln(stderr, "colibri-mcp: serving MCP on stdin/stdout, waiting for an MCP client (an editor runs this); "+
			"press Ctrl-D to quit, or see 'colibri-mcp help' for the commands")
	}
	ctx = reqctx.WithPrincipal(ctx, reqctx.Stdio)
	server, err := newServer(ctx, s, svc)
	if err != nil {
		return err
	}
	// A bad line is answered and skipped; a cancelled call gets no answer
	// (stdioserve).
	t := &stdioserve.Transport{
		Reader:          stdin,
		Writer:          stdout,
		MaxMessageBytes: int(maxMessage(s)),
		DrainTimeout:    shutdownWait,
		Logger:          s.logger,
		Bulk:            s.bulk,
		// serve --only's warm calls, relayed below go-sdk's sessions
		// (docs/benchmarks.md, "The serve --only hop"); nil otherwise.
		Calls: svc.OnlyCalls(server),
	}
	if err := server.Run(ctx, t); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
		return failed(fmt.Errorf("serving stdio: %w", err))
	}
	return nil
}

// checkOnly refuses serve --only with a name the registry lacks, naming
// the closest. (With --aggregate, which offers every server's tools, it is
// refused before: the two exclude each other.)
func checkOnly(s *settings) error {
	if s.only == "" {
		return nil
	}
	reg, err := s.loadRegistry()
	if err != nil {
		return usage(err)
	}
	if reg.Servers[s.only] != nil {
		return nil
	}
	msg := fmt.Sprintf("serve: --only %q: %s has no such server", s.only, s.configPath)
	if near := suggest.Closest(s.only, reg.Names()); near != "" {
		msg += fmt.Sprintf(": did you mean %q?", near)
	} else if names := reg.Names(); len(names) > 0 {
		shown := strings.Join(names[:min(len(names), 10)], ", ")
		if len(names) > 10 {
			// Never a list that reads as whole when it is not.
			shown += fmt.Sprintf(" and %d more: colibri-mcp servers lists them", len(names)-10)
		}
		msg += " (it has " + shown + ")"
	}
	return usage(errors.New(msg + " (see 'colibri-mcp serve --help')"))
}

// newServer is the MCP server serve offers: colibri's own, or with --only
// the one hosted server's (tools.Service.NewOnlyServer), which must start
// for colibri to learn what it declares.
func newServer(ctx context.Context, s *settings, svc *tools.Service) (*mcp.Server, error) {
	if s.only == "" {
		return svc.NewServer(version), nil
	}
	server, err := svc.NewOnlyServer(ctx, s.only, version)
	if err != nil {
		return nil, &exitError{code: exitFor(err), err: fmt.Errorf("serve --only %s: %w", s.only, err)}
	}
	return server, nil
}

// exitFor maps a colibri failure to the command line's exit code: settings
// the user must change are usage errors (2); everything else failed (1).
func exitFor(err error) int {
	switch failure.KindOf(err) {
	case failure.KindConfig, failure.KindCallDisabled, failure.KindJail, failure.KindDenied, failure.KindToolChanged:
		return exitUsage
	}
	return exitFailed
}

// report prints a colibri failure, as JSON or as a line on stderr, and
// returns the matching exit code.
func report(err error, asJSON bool, stdout, stderr io.Writer) error {
	if asJSON {
		termview.JSON(stdout, map[string]any{"colibri_error": tools.Detail(err)})
	} else {
		termview.Failure(stderr, tools.Detail(err))
	}
	return silent(exitFor(err))
}

func cmdServers(ctx context.Context, s *settings, asJSON bool, stdout, stderr io.Writer) error {
	stdout, stderr = termview.Safe(stdout), termview.Safe(stderr) // names, descriptions, stderr tails: others' words
	svc, h := newService(s)
	defer h.Close()
	out, err := svc.Servers(ctx)
	if err != nil {
		return report(err, asJSON, stdout, stderr)
	}
	if asJSON {
		termview.JSON(stdout, out)
		return nil
	}
	return termview.Servers(stdout, out)
}

func cmdListTools(ctx context.Context, s *settings, server string, asJSON bool, stdout, stderr io.Writer) error {
	// The command line is a caller too: the policy applies to it.
	ctx = reqctx.WithPrincipal(ctx, reqctx.Stdio)
	stdout, stderr = termview.Safe(stdout), termview.Safe(stderr) // names, descriptions, stderr tails: others' words
	svc, h := newService(s)
	defer h.Close()
	if server == "" && !asJSON {
		return listEveryServer(ctx, s, svc, stdout, stderr)
	}
	// The tool's own defaults: names only for every server, everything for one.
	out, err := svc.ListTools(ctx, tools.ListToolsInput{Server: server}, nil)
	if err != nil {
		return report(err, asJSON, stdout, stderr)
	}
	failures := 0
	for _, st := range out.Servers {
		if st.Error != nil {
			failures++
		}
	}
	if asJSON {
		termview.JSON(stdout, out)
	} else {
		for _, st := range out.Servers {
			termview.ServerTools(stdout, st)
		}
	}
	if failures > 0 {
		return silent(exitFailed)
	}
	return nil
}

// listEveryServer lists each server's tools as soon as that server
// answers: the slowest (one that hangs until its timeout) holds back no
// other, and a failure shows its stderr tail where it is.
func listEveryServer(ctx context.Context, s *settings, svc *tools.Service, stdout, stderr io.Writer) error {
	reg, err := s.loadRegistry()
	if err != nil {
		return report(&failure.Error{Kind: failure.KindConfig, Err: err}, false, stdout, stderr)
	}
	failures := termview.EachServer(stdout, reg.Names(), func(name string) tools.ServerTools {
		out, err := svc.ListTools(ctx, tools.ListToolsInput{Server: name, Detail: tools.DetailNames}, nil)
		switch {
		case err != nil:
			return tools.ServerTools{Server: name, Error: tools.Detail(err)}
		case len(out.Servers) == 1:
			return out.Servers[0]
		}
		return tools.ServerTools{Server: name}
	})
	if failures > 0 {
		return silent(exitFailed)
	}
	return nil
}

func cmdCall(ctx context.Context, s *settings, server, tool string, opts callOptions, stdout, stderr io.Writer) error {
	// The command line is a caller too: the policy applies to it.
	ctx = reqctx.WithPrincipal(ctx, reqctx.Stdio)
	closeAudit, err := openAudit(s, stderr)
	if err != nil {
		return err
	}
	defer closeAudit()
	svc, h := newService(s)
	defer h.Close()
	asJSON := opts.output != "text"
	var caller *session.Caller
	p := termview.NewProgress(stderr)
	if termview.IsTerminal(stderr) {
		// A person is watching: show the hosted server's progress.
		caller = &session.Caller{Progress: p.Show}
	}
	stdout, stderr = termview.Safe(stdout), termview.Safe(stderr) // the hosted server's words
	// Audited and counted, as a session's call is.
	res, err := svc.Call(ctx, server, tool, opts.args, caller)
	p.Done() // cleared before the result or the error is written
	if err != nil && ctx.Err() != nil {
		// Ctrl-C: the call was cancelled (the hosted server told so); the
		// shell's convention for a command ended by SIGINT.
		fmt.Fprintln(stderr, "colibri-mcp: interrupted: the call was cancelled")
		return silent(exitInterrupted)
	}
	if err != nil {
		return report(err, asJSON, stdout, stderr)
	}
	switch opts.output {
	case "structured":
		// The call tool passes the hosted result through, so its
		// structuredContent is the hosted tool's own: null when the tool
		// returns none (text only), as docs/cli.md has it.
		termview.JSON(stdout, res.StructuredContent)
	case "result":
		termview.JSON(stdout, res)
	default:
		termview.Result(stdout, res)
	}
	if res.IsError {
		if h := sandboxDeniedHint(s, server, res); h != "" {
			fmt.Fprintln(stderr, "hint:", h)
		}
		return silent(exitFailed)
	}
	return nil
}

// sandboxDeniedHint is what to tell the person whose call of a sandboxed
// server's tool failed with the kernel's "permission denied" (EACCES from
// Node, PermissionError from Python): it reads like the server's bug, and
// is the sandbox keeping to what the entry grants. The result itself is
// the hosted tool's, unchanged; the hint goes to stderr. "" otherwise.
func sandboxDeniedHint(s *settings, server string, res *mcp.CallToolResult) string {
	reg, err := s.loadRegistry()
	if err != nil || reg.Servers[server] == nil {
		return ""
	}
	var text strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
			text.WriteByte('\n')
		}
	}
	return launch.SandboxDeniedHint(reg.Servers[server], text.String())
}

// callOptions are call's flags, checked.
type callOptions struct {
	args   json.RawMessage
	output string // text, structured or result
}

var callOutputs = []string{"text", "structured", "result"}

func callOptionsFrom(cmd *cli.Command, stdin io.Reader) (callOptions, error) {
	o := callOptions{output: cmd.String("output")}
	bad := func(format string, a ...any) (callOptions, error) {
		return callOptions{}, usage(fmt.Errorf("call: "+format+" (%s)", append(a, clihelp.HelpHint(cmd))...))
	}
	if !slices.Contains(callOutputs, o.output) {
		if near := suggest.Closest(o.output, callOutputs); near != "" {
			return bad("--output %q: did you mean %q?", o.output, near)
		}
		return bad("--output %q: want text, structured or result", o.output)
	}
	if cmd.Bool("json") {
		if cmd.IsSet("output") && o.output != "structured" {
			return bad("--json is --output structured; it cannot go with --output %s", o.output)
		}
		o.output = "structured"
	}
	var inline, file *string // nil: not given
	if cmd.IsSet("args") {
		inline = new(cmd.String("args"))
	}
	if cmd.IsSet("args-file") {
		file = new(cmd.String("args-file"))
	}
	var err error
	if o.args, err = readCallArgs(inline, file, stdin); err != nil {
		return bad("%v", err)
	}
	return o, nil
}

// probeCapabilities is check's --capabilities: client capabilities,
// comma-separated, each one of sampling, roots and elicitation, sorted
// and each once.
func probeCapabilities(list string) ([]string, error) {
	var out []string
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "":
			continue
		case "sampling", "roots", "elicitation":
			out = append(out, name)
		default:
			return nil, fmt.Errorf("--capabilities: %q is not a client capability colibri can offer: want sampling, roots or elicitation, comma-separated", name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func cmdCheck(ctx context.Context, s *settings, probe bool, caps []string, asJSON bool, stdout io.Writer) error {
	// The command line is a caller too: the policy applies to it.
	ctx = reqctx.WithPrincipal(ctx, reqctx.Stdio)
	stdout = termview.Safe(stdout) // names, descriptions, stderr tails: others' words
	start := time.Now()
	svc, h := newService(s)
	defer h.Close()
	opts := tools.CheckOptions{Probe: probe, Capabilities: caps}
	if !asJSON {
		opts.Read = func(names []string) { termview.CheckRead(stdout, s.configPath, len(names)) }
		opts.Done = func(r tools.CheckServer) { termview.CheckLine(stdout, r) }
	}
	out := svc.Check(ctx, opts)
	out.ConfigPath = s.configPath // the whole path: check answers the operator, never a caller over HTTP
	if asJSON {
		termview.JSON(stdout, out)
	} else {
		termview.CheckEnd(stdout, out, s.configPath, time.Since(start))
	}
	switch {
	case out.Error != nil:
		return silent(exitUsage)
	case !out.OK:
		return silent(exitFailed)
	}
	return nil
}
