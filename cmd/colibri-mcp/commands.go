package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/httpserve"
	"github.com/colibri-mcp/colibri-mcp/internal/stdioserve"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// serve runs colibri's MCP server over stdio (or HTTP with --http) until the
// client leaves or a signal arrives, then tears every hosted process down.
func serve(ctx context.Context, s *settings, stdin io.Reader, stdout, stderr io.Writer) error {
	if s.httpAddr != "" {
		// Over HTTP a session id is a credential: keep it out of info logs.
		s.logger = slog.New(httpserve.QuietSessionIDs(s.logger.Handler()))
	}
	svc, h := newService(s)
	defer h.Close()
	if s.httpAddr != "" {
		s.logger.Info("starting colibri-mcp", "version", version, "registry", s.configPath, "external_call", s.externalCall)
		return serveHTTP(ctx, s, svc)
	}
	s.logger.Info("serving MCP over stdio", "version", version, "registry", s.configPath, "external_call", s.externalCall)
	server := svc.NewServer(version)
	// A bad line is answered and skipped (stdioserve); a cancelled call gets
	// no answer (QuietCancel).
	t := tools.QuietCancel(&stdioserve.Transport{
		Reader:          stdin,
		Writer:          stdout,
		MaxMessageBytes: int(maxMessage(s)),
		DrainTimeout:    shutdownWait,
		Logger:          s.logger,
	})
	ctx = tools.WithPrincipal(ctx, tools.StdioPrincipal)
	if err := server.Run(ctx, t); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
		return failed(fmt.Errorf("serving stdio: %w", err))
	}
	return nil
}

// exitFor maps a colibri failure to the command line's exit code: settings
// the user must change are usage errors (2); everything else failed (1).
func exitFor(err error) int {
	switch host.KindOf(err) {
	case host.KindConfig, host.KindCallDisabled, host.KindJail:
		return exitUsage
	}
	return exitFailed
}

// report prints a colibri failure, as JSON or as a line on stderr, and
// returns the matching exit code.
func report(err error, asJSON bool, stdout, stderr io.Writer) error {
	if asJSON {
		writeJSON(stdout, map[string]any{"colibri_error": tools.Detail(err)})
	} else {
		d := tools.Detail(err)
		fmt.Fprintf(stderr, "colibri-mcp: %s: %s\n", d.Kind, d.Message)
		if d.StderrTail != "" {
			fmt.Fprintf(stderr, "last lines of the server's stderr:\n%s\n", indent(d.StderrTail))
		}
	}
	return silent(exitFor(err))
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

func cmdServers(ctx context.Context, s *settings, asJSON bool, stdout, stderr io.Writer) error {
	svc, h := newService(s)
	defer h.Close()
	out, err := svc.Servers(ctx)
	if err != nil {
		return report(err, asJSON, stdout, stderr)
	}
	if asJSON {
		writeJSON(stdout, out)
		return nil
	}
	fmt.Fprintf(stdout, "registry: %s\ncalling hosted tools: %s\n\n", out.ConfigPath, onOff(out.ExternalCall))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tCOMMAND\tENV\tJAIL\tDESCRIPTION")
	for _, srv := range out.Servers {
		cmdline := strings.Join(append([]string{srv.Command}, srv.Args...), " ")
		j := "-"
		if srv.Jail != nil {
			j = srv.Jail.Name + srv.Jail.Path
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", srv.Name, cmdline, orDash(strings.Join(srv.EnvKeys, ",")), j, srv.Description)
	}
	return tw.Flush()
}

func onOff(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled (--external-call or COLIBRI_MCP_EXTERNAL_CALL=1 enables it)"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cmdListTools(ctx context.Context, s *settings, server string, asJSON bool, stdout, stderr io.Writer) error {
	svc, h := newService(s)
	defer h.Close()
	out, err := svc.ListTools(ctx, server, nil)
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
		writeJSON(stdout, out)
	} else {
		for i, st := range out.Servers {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			if st.Error != nil {
				fmt.Fprintf(stdout, "%s: error: %s: %s\n", st.Server, st.Error.Kind, st.Error.Message)
				continue
			}
			fmt.Fprintf(stdout, "%s: %d tools\n", st.Server, len(st.Tools))
			for _, t := range st.Tools {
				fmt.Fprintf(stdout, "  %-32s %s\n", t.Name, firstLine(t.Description))
			}
		}
	}
	if failures > 0 {
		return silent(exitFailed)
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func cmdCall(ctx context.Context, s *settings, server, tool, args string, asJSON bool, stdout, stderr io.Writer) error {
	svc, h := newService(s)
	defer h.Close()
	if !json.Valid([]byte(args)) {
		return usage(fmt.Errorf("--args: not valid JSON: %s", args))
	}
	res, err := svc.CallTool(ctx, server, tool, json.RawMessage(args), nil)
	if err != nil {
		return report(err, asJSON, stdout, stderr)
	}
	if asJSON {
		// The call tool passes the hosted result through, so its
		// structuredContent is the hosted tool's own: null when the tool
		// returns none (text only), as CONTRACT.md section 1 has it.
		writeJSON(stdout, res.StructuredContent)
	} else {
		printResult(stdout, res)
	}
	if res.IsError {
		return silent(exitFailed)
	}
	return nil
}

// printResult shows a hosted result as a person reads it: text as it is,
// other content summarized.
func printResult(w io.Writer, res *mcp.CallToolResult) {
	if res.IsError {
		fmt.Fprintln(w, "the tool reported an error:")
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			fmt.Fprintln(w, c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link %s]\n", c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				fmt.Fprintf(w, "[resource %s]\n", c.Resource.URI)
			}
		}
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		fmt.Fprintf(w, "structured: %s\n", b)
	}
}

// checkResult is what `check --json` prints.
type checkResult struct {
	ConfigPath string              `json:"config_path"`
	OK         bool                `json:"ok"`
	Error      *tools.ErrorDetail  `json:"error,omitempty"`
	Servers    []checkServerResult `json:"servers"`
}

type checkServerResult struct {
	Server string             `json:"server"`
	OK     bool               `json:"ok"`
	Error  *tools.ErrorDetail `json:"error,omitempty"`
	Tools  *int               `json:"tools,omitempty"` // with --probe
}

func cmdCheck(ctx context.Context, s *settings, probe, asJSON bool, stdout, stderr io.Writer) error {
	svc, h := newService(s)
	defer h.Close()
	out := checkResult{ConfigPath: s.configPath, OK: true, Servers: []checkServerResult{}}
	reg, err := registry.Load(s.configPath)
	if err != nil {
		out.OK = false
		out.Error = tools.Detail(&host.Error{Kind: host.KindConfig, Err: err})
	} else {
		for _, name := range reg.Names() {
			r := checkServerResult{Server: name, OK: true}
			if err := h.Check(reg.Servers[name]); err != nil {
				r.OK, r.Error = false, tools.Detail(err)
			}
			out.Servers = append(out.Servers, r)
		}
		if probe {
			listed, err := svc.ListTools(ctx, "", nil)
			if err != nil {
				return report(err, asJSON, stdout, stderr)
			}
			for i, st := range listed.Servers {
				r := &out.Servers[i]
				if !r.OK {
					continue
				}
				if st.Error != nil {
					r.OK, r.Error = false, st.Error
					continue
				}
				n := len(st.Tools)
				r.Tools = &n
			}
		}
		for _, r := range out.Servers {
			out.OK = out.OK && r.OK
		}
	}
	if asJSON {
		writeJSON(stdout, out)
	} else {
		if out.Error != nil {
			fmt.Fprintf(stdout, "registry %s: %s\n", s.configPath, out.Error.Message)
		} else {
			fmt.Fprintf(stdout, "registry %s: valid, %d servers\n", s.configPath, len(out.Servers))
		}
		for _, r := range out.Servers {
			switch {
			case r.Error != nil:
				fmt.Fprintf(stdout, "  %-20s FAIL %s: %s\n", r.Server, r.Error.Kind, r.Error.Message)
			case r.Tools != nil:
				fmt.Fprintf(stdout, "  %-20s ok (%d tools)\n", r.Server, *r.Tools)
			default:
				fmt.Fprintf(stdout, "  %-20s ok\n", r.Server)
			}
		}
	}
	switch {
	case out.Error != nil:
		return silent(exitUsage)
	case !out.OK:
		return silent(exitFailed)
	}
	return nil
}
