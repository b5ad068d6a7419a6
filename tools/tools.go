// Package tools is colibri-mcp's own MCP server: the three tools that show
// the registry, list a hosted server's tools and call one, the call gate, and
// the mapping of hosting failures to isError results.
//
//	svc := tools.New(tools.Options{Registry: loader.Load, Host: h, ExternalCall: gate})
//	server := svc.NewServer("1.2.3")
//	err := server.Run(ctx, &mcp.StdioTransport{})
//
// The same Service answers the command line, so that `colibri-mcp servers
// --json` prints exactly what the MCP tool returns as structuredContent.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
	"github.com/colibri-mcp/colibri-mcp/metrics"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// The tools' names (CONTRACT.md section 4).
const (
	ServersTool   = "colibri_external_mcp_servers"
	ListToolsTool = "colibri_external_mcp_list_tools"
	CallToolTool  = "colibri_external_mcp_call_tool"
)

// Options configure a Service.
type Options struct {
	// Registry returns the registry as it is now; it is called on every
	// request, so that an edit takes effect without a restart.
	Registry func() (*registry.Registry, error)
	// ConfigPath is the registry's path, shown by the servers tool.
	ConfigPath string
	Host       *host.Host
	// ExternalCall is the call gate: calling a hosted tool is refused without it.
	ExternalCall bool
	// Logger receives colibri's own logs; nil discards them.
	Logger *slog.Logger
	// Audit, when set, gets one record per call of a hosted tool
	// (CONTRACT.md section 10); Digester digests their arguments (nil:
	// plain SHA-256). Metrics, when set, counts and times (section 11).
	Audit    *audit.Writer
	Digester *audit.Digester
	Metrics  *metrics.Metrics
}

// Service answers the three tools.
type Service struct {
	opts   Options
	log    *slog.Logger
	levels logLevels
}

// New returns a Service.
func New(opts Options) *Service {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Service{opts: opts, log: log}
}

// ServersResult is the servers tool's structuredContent.
type ServersResult struct {
	ConfigPath   string       `json:"config_path"`
	ExternalCall bool         `json:"external_call"`
	Servers      []ServerInfo `json:"servers"`
}

// ServerInfo describes one registry entry. Environment values never appear:
// only their names.
type ServerInfo struct {
	Name        string    `json:"name"`
	Command     string    `json:"command"`
	Args        []string  `json:"args"`
	EnvKeys     []string  `json:"env_keys"`
	Cwd         string    `json:"cwd,omitempty"`
	Description string    `json:"description,omitempty"`
	Lifecycle   string    `json:"lifecycle"`
	Jail        *JailInfo `json:"jail,omitempty"`
	// Warm is shown for persistent servers: whether a warm process is up,
	// and each one's pid and uptime.
	Warm *WarmInfo `json:"warm,omitempty"`
}

// WarmInfo is the state of a persistent server's warm processes (one per
// set of client capabilities offered).
type WarmInfo struct {
	Up        bool               `json:"up"`
	Processes []host.WarmProcess `json:"processes"`
}

// JailInfo is a server's confinement, as the registry gives it.
type JailInfo struct {
	Name     string `json:"name,omitempty"`
	Path     string `json:"path,omitempty"`
	RootPath string `json:"root_path,omitempty"`
	User     string `json:"user,omitempty"`
	IP4      string `json:"ip4,omitempty"`
}

// ListToolsResult is the list-tools tool's structuredContent.
type ListToolsResult struct {
	Servers []ServerTools `json:"servers"`
}

// ServerTools is one server's tools, as it returned them, or its error.
type ServerTools struct {
	Server string       `json:"server"`
	Tools  []*mcp.Tool  `json:"tools,omitempty"`
	Error  *ErrorDetail `json:"error,omitempty"`
}

// ErrorDetail is a colibri failure, as the contract shapes colibri_error.
type ErrorDetail struct {
	Kind       host.Kind  `json:"kind"`
	Message    string     `json:"message"`
	Server     string     `json:"server,omitempty"`
	Tool       string     `json:"tool,omitempty"`
	Phase      host.Phase `json:"phase,omitempty"`
	StderrTail string     `json:"stderr_tail,omitempty"`
	Attempts   int        `json:"attempts,omitempty"`
}

// Detail turns any error into the contract's colibri_error. An error that is
// not a *host.Error is a bug of colibri's, and says so.
func Detail(err error) *ErrorDetail {
	var e *host.Error
	if !errors.As(err, &e) {
		return &ErrorDetail{Kind: host.KindInternal, Message: "internal error (a bug in colibri-mcp; please report it): " + err.Error()}
	}
	d := &ErrorDetail{
		Kind:       e.Kind,
		Message:    e.Error(),
		Server:     e.Server,
		Tool:       e.Tool,
		Phase:      e.Phase,
		StderrTail: e.StderrTail,
	}
	if e.Attempts > 1 {
		d.Attempts = e.Attempts
	}
	return d
}

// Servers reads the registry and describes every server.
func (s *Service) Servers(ctx context.Context) (*ServersResult, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	out := &ServersResult{ConfigPath: s.opts.ConfigPath, ExternalCall: s.opts.ExternalCall, Servers: []ServerInfo{}}
	for _, name := range reg.Names() {
		srv := reg.Servers[name]
		info := ServerInfo{
			Name:        name,
			Command:     srv.Command,
			Args:        srv.Args,
			EnvKeys:     srv.EnvKeys(),
			Cwd:         srv.Cwd,
			Description: srv.Description,
			Lifecycle:   registry.PerRequest,
		}
		if srv.Lifecycle != "" {
			info.Lifecycle = srv.Lifecycle
		}
		if info.Args == nil {
			info.Args = []string{}
		}
		if j := srv.Jail; j != nil {
			info.Jail = &JailInfo{Name: j.Name, Path: j.Path, RootPath: j.RootPath, User: j.User, IP4: j.IP4}
		}
		if srv.IsPersistent() {
			procs := s.opts.Host.Warm(name)
			if procs == nil {
				procs = []host.WarmProcess{}
			}
			info.Warm = &WarmInfo{Up: len(procs) > 0, Processes: procs}
		}
		out.Servers = append(out.Servers, info)
	}
	return out, nil
}

// ListTools lists the tools of one server, or of every server concurrently
// when server is "". With one server, its failure is the error; with all,
// each failure is reported in its entry.
func (s *Service) ListTools(ctx context.Context, server string, caller *host.Caller) (*ListToolsResult, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	if server != "" {
		srv, err := lookup(reg, server)
		if err != nil {
			return nil, err
		}
		tools, err := s.opts.Host.ListTools(ctx, srv, caller)
		if err != nil {
			return nil, err
		}
		tools = s.visible(ctx, reg, srv, tools)
		return &ListToolsResult{Servers: []ServerTools{{Server: server, Tools: tools}}}, nil
	}
	names := reg.Names()
	out := &ListToolsResult{Servers: make([]ServerTools, len(names))}
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			tools, err := s.opts.Host.ListTools(ctx, reg.Servers[name], caller)
			out.Servers[i] = ServerTools{Server: name, Tools: s.visible(ctx, reg, reg.Servers[name], tools)}
			if err != nil {
				out.Servers[i] = ServerTools{Server: name, Error: Detail(err)}
			}
		})
	}
	wg.Wait()
	return out, nil
}

// CallTool calls tool name of server with args (a JSON object, or empty).
// It refuses with call_disabled, spawning nothing, while the gate is off.
func (s *Service) CallTool(ctx context.Context, server, name string, args json.RawMessage, caller *host.Caller) (*mcp.CallToolResult, error) {
	if !s.opts.ExternalCall {
		return nil, &host.Error{Kind: host.KindCallDisabled, Server: server, Tool: name,
			Err: errors.New("calling hosted tools is disabled: start colibri-mcp with --external-call or set COLIBRI_MCP_EXTERNAL_CALL=1 (hosted servers are untrusted third-party code)")}
	}
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	srv, err := lookup(reg, server)
	if err != nil {
		return nil, err
	}
	if caller, err = s.guardCall(ctx, reg, srv, name, caller); err != nil {
		return nil, err
	}
	decoded, err := decodeArguments(args)
	if err != nil {
		return nil, &host.Error{Kind: host.KindInvalidArguments, Server: server, Tool: name, Phase: host.PhaseCall, Err: err}
	}
	res, err := s.opts.Host.CallTool(ctx, srv, name, decoded, caller)
	if host.KindOf(err) == host.KindUnknownTool {
		// The host knows only that the tool is missing; name the ones the
		// server has (those the caller may see), so that the caller (often
		// a model) can correct itself.
		if have, lerr := s.opts.Host.ListTools(ctx, srv, caller); lerr == nil {
			return nil, UnknownTool(server, name, s.visible(ctx, reg, srv, have))
		}
	}
	return res, err
}

// UnknownTool is the unknown_tool failure for a tool that server does not
// list: it names the closest tool and the tools the server has.
func UnknownTool(server, name string, have []*mcp.Tool) error {
	names := make([]string, 0, len(have))
	for _, t := range have {
		names = append(names, t.Name)
	}
	hint := "the server lists no tools"
	if len(names) > 0 {
		const most = 30 // a long list says little more, at a cost in a model's context
		listed := strings.Join(names[:min(len(names), most)], ", ")
		if len(names) > most {
			listed += fmt.Sprintf(", and %d more", len(names)-most)
		}
		hint = "its tools: " + listed
		if near := suggest.Closest(name, names); near != "" {
			hint = fmt.Sprintf("did you mean %q? %s", near, hint)
		}
	}
	return &host.Error{Kind: host.KindUnknownTool, Server: server, Tool: name, Phase: host.PhaseList,
		Err: errors.New("the server does not list this tool"), Hint: hint}
}

// registry reads the registry as it is now, and lets the host shut down
// the warm processes of servers removed or changed since.
func (s *Service) registry() (*registry.Registry, error) {
	reg, err := s.opts.Registry()
	if err != nil {
		return nil, &host.Error{Kind: host.KindConfig, Err: err}
	}
	s.opts.Host.Retain(reg)
	return reg, nil
}

func lookup(reg *registry.Registry, name string) (*registry.Server, error) {
	if srv, ok := reg.Servers[name]; ok {
		return srv, nil
	}
	known := strings.Join(reg.Names(), ", ")
	if known == "" {
		known = "none"
	}
	hint := "known servers: " + known
	if near := suggest.Closest(name, reg.Names()); near != "" {
		hint = fmt.Sprintf("did you mean %q? %s", near, hint)
	}
	return nil, &host.Error{Kind: host.KindUnknownServer, Server: name,
		Err:  fmt.Errorf("no server named %q in %s", name, orDefault(reg.Path, "the registry")),
		Hint: hint}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// decodeArguments decodes a hosted tool's arguments, keeping numbers exactly
// as written (json.Number), so that they reach the hosted server unchanged.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments: invalid JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments: must be a JSON object, got %s", jsonType(v))
	}
	return m, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}
