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
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/instance"
	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/internal/pool"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
	"github.com/colibri-mcp/colibri-mcp/metrics"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools/answer"
	"github.com/colibri-mcp/colibri-mcp/tools/caller"
	"github.com/colibri-mcp/colibri-mcp/tools/catalog"
	"github.com/colibri-mcp/colibri-mcp/tools/describe"
	"github.com/colibri-mcp/colibri-mcp/tools/input"
	"github.com/colibri-mcp/colibri-mcp/tools/record"
)

// The tools' names (docs/protocol.md).
const (
	ServersTool   = describe.ServersTool
	ListToolsTool = describe.ListToolsTool
	CallToolTool  = describe.CallToolTool
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

	// Aggregate also exposes every hosted tool as a tool of colibri's own,
	// PREFIX__TOOL (--aggregate, docs/cli.md#aggregate-mode).
	Aggregate bool
	// RegistryPoll is how often a serving colibri looks at the registry
	// file (one stat) to notice an edit between requests; every request
	// looks too. Zero means DefaultRegistryPoll; negative, requests only.
	RegistryPoll time.Duration
	// ListWait bounds how long a tools/list waits, in aggregate mode, for
	// hosted lists being read (at start, after a registry edit) before it
	// answers with what is known; the rest follows with list_changed.
	// Zero means DefaultListWait.
	ListWait time.Duration
	// Audit, when set, gets one record per call of a hosted tool
	// (docs/operations.md#audit-log); Digester digests their arguments (nil:
	// plain SHA-256). Metrics, when set, counts and times (section 11).
	Audit    *audit.Writer
	Digester *audit.Digester
	Metrics  *metrics.Metrics
	// Bulk is the face's table of large strings (internal/bulk), nil when
	// the face lifts none. A tools/call's arguments may then hold references
	// to its strings: colibri reads them resolved (its schema checks, the
	// audit digest) and forwards them as references, which the connections
	// lower.
	Bulk *bulk.Table
	// HideFolders cuts every absolute path in colibri's own error messages
	// to its last element: set for callers over HTTP, who must not learn
	// the server's folders (the operator's log keeps them).
	HideFolders bool
	// Pins, when set, are the pinned tool definitions every hosted list is
	// checked against (docs/cli.md#pinned-tool-definitions; the registry's "pin" says
	// what a change does), and one more source list_tools' query searches
	// without contacting a server. nil pins nothing.
	Pins *pin.Store
	// StateProblem, when set, says why srv cannot run for want of a state
	// folder (internal/statedir: its pins, sandbox home or OAuth tokens
	// would be there, and it cannot be used); Check reports it per server.
	// Requests meet the same words where they use the folder.
	StateProblem func(reg *registry.Registry, srv *registry.Server) error
	// Instance is this colibri's name (--instance): an HTTP session id
	// begins with it, so that a load balancer in front of several
	// instances can route a session by prefix (docs/scaling.md).
	Instance string
	// Sealer seals, as this instance's, what a stateless caller continues
	// with (MRTR requestState, list cursors; docs/scaling.md): serve makes
	// one per run and hands the same to its HTTP face. Nil: one of its
	// own, named Instance.
	Sealer *instance.Sealer
}

// Defaults of Options.
const (
	DefaultRegistryPoll = 2 * time.Second
	DefaultListWait     = 5 * time.Second
)

// Service answers the three tools.
type Service struct {
	opts   Options
	log    *slog.Logger
	levels caller.Levels
	rounds *caller.Rounds // 2026-07-28 callers' requests waiting for their input
	cat    *catalog.Catalog
	rec    *record.Recorder
	// pinsFor is the registry the pins were last configured with.
	pinsFor atomic.Pointer[registry.Registry]
	// onlies are serve --only's servers (NewOnlyServer), by the MCP
	// server each made: OnlyCalls finds its fast path.
	onlies sync.Map
}

// New returns a Service. Close ends what serving started.
func New(opts Options) *Service {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.RegistryPoll == 0 {
		opts.RegistryPoll = DefaultRegistryPoll
	}
	if opts.ListWait <= 0 {
		opts.ListWait = DefaultListWait
	}
	if opts.Sealer == nil {
		opts.Sealer = instance.New(cmp.Or(opts.Instance, "colibri"))
	}
	s := &Service{opts: opts, log: log}
	s.rounds = caller.NewRounds(opts.Sealer, opts.Bulk, log)
	s.rec = &record.Recorder{Audit: opts.Audit, Digester: opts.Digester, Metrics: opts.Metrics, Bulk: opts.Bulk,
		Logger: log, Labels: s.labels}
	s.cat = catalog.New(catalog.Options{
		Aggregate:    opts.Aggregate,
		ExternalCall: opts.ExternalCall,
		RegistryPoll: opts.RegistryPoll,
		ListWait:     opts.ListWait,
		Logger:       log,
		Registry:     opts.Registry,
		Retain:       opts.Host.Retain,
		Own:          s.ownHandler,
		Hosted:       s.handleHosted,
		List: func(ctx context.Context, srv *registry.Server) error {
			_, err := s.opts.Host.ListTools(ctx, srv, nil)
			return err
		},
		Screen: s.screen,
		PinCheck: func(reg *registry.Registry, srv *registry.Server, tools []*mcp.Tool) {
			_, _ = s.pinVerdict(reg, srv, pin.NoCaps, tools)
		},
		PinGeneration: s.pinGeneration,
		Allowed: func(ctx context.Context, reg *registry.Registry, srv *registry.Server, tool *mcp.Tool) bool {
			return s.allowed(ctx, reg, srv, tool).Allow
		},
	})
	if opts.Aggregate {
		// The catalog hears of every list the host reads: a per_request
		// server is never started for a tools/list.
		opts.Host.WatchLists(s.cat.Heard)
	}
	return s
}

// Close stops what NewServer started (the registry poll, and the reading of
// hosted lists in aggregate mode) and waits for it, and cancels the
// requests of 2026-07-28 callers waiting for their input; call it before
// closing the Host.
func (s *Service) Close() {
	s.rounds.Close()
	s.cat.Close()
}

// ServersResult is the servers tool's structuredContent.
type ServersResult struct {
	ConfigPath   string       `json:"config_path"`
	ExternalCall bool         `json:"external_call"`
	Servers      []ServerInfo `json:"servers"`
}

// ServerInfo describes one registry entry. Environment values never appear:
// only their names.
//
// A command entry shows command, args and env_keys; a url entry (a remote
// server) shows url, transport, header_keys and auth (none, bearer or
// oauth) instead: header values and tokens never appear either.
type ServerInfo struct {
	Name        string   `json:"name"`
	Command     string   `json:"command,omitzero"`
	Args        []string `json:"args,omitzero"`
	EnvKeys     []string `json:"env_keys,omitzero"`
	URL         string   `json:"url,omitzero"`
	Transport   string   `json:"transport,omitzero"`
	HeaderKeys  []string `json:"header_keys,omitzero"`
	Auth        string   `json:"auth,omitzero"`
	Cwd         string   `json:"cwd,omitempty"`
	Description string   `json:"description,omitempty"`
	// Source is where the entry came from, as add --from-registry wrote
	// it: the MCP Registry, the server's name there and its version.
	Source    *registry.Source `json:"source,omitempty"`
	Lifecycle string           `json:"lifecycle"`
	Jail      *JailInfo        `json:"jail,omitempty"`
	// Sandbox is the entry's Linux sandbox, paths resolved; Confinement
	// says in one line how its processes are confined.
	Sandbox     *registry.Sandbox `json:"sandbox,omitempty"`
	Confinement string            `json:"confinement,omitempty"`
	// Warm is shown for persistent servers: whether a warm process is up,
	// and each one's pid and uptime.
	Warm *WarmInfo `json:"warm,omitempty"`
	// Spare is shown for per_request servers with "spare": how many
	// started processes wait for a request (docs/registry.md#spare-processes-ready-before-the-request).
	Spare *SpareInfo `json:"spare,omitempty"`
}

// SpareInfo is the state of a server's spare processes; Error is set while
// they keep exiting at start and colibri cools down (kind unavailable).
type SpareInfo struct {
	Ready int          `json:"ready"`
	Error *ErrorDetail `json:"error,omitempty"`
}

// WarmInfo is the state of a persistent server's warm processes (one per
// set of client capabilities offered).
type WarmInfo struct {
	Up        bool           `json:"up"`
	Processes []pool.Process `json:"processes"`
}

// JailInfo is a server's confinement, as the registry gives it.
type JailInfo struct {
	Name     string `json:"name,omitempty"`
	Path     string `json:"path,omitempty"`
	RootPath string `json:"root_path,omitempty"`
	User     string `json:"user,omitempty"`
	IP4      string `json:"ip4,omitempty"`
}

// ListToolsInput is what list_tools takes (docs/protocol.md); every
// field is optional.
type ListToolsInput struct {
	// Server lists one server; "" lists every server, concurrently.
	Server string `json:"server,omitempty"`
	// Tool keeps only the tool of that name.
	Tool string `json:"tool,omitempty"`
	// Detail is DetailNames or DetailFull; "" means names without Server,
	// full with it.
	Detail string `json:"detail,omitempty"`
	// Query, when set, searches the lists colibri already holds instead
	// of listing (search.go).
	Query string `json:"query,omitempty"`
}

// Detail levels of list_tools.
const (
	DetailNames = "names" // name and the first sentence of the description
	DetailFull  = "full"  // the tool as the hosted server described it
)

// ListToolsResult is the list-tools tool's structuredContent.
type ListToolsResult struct {
	Servers []ServerTools `json:"servers"`
}

// ServerTools is one server's tools, as it returned them, or its error.
// Changed are its tools whose definitions differ from their pins (hidden
// from Tools under pin: enforce, flagged under warn).
type ServerTools struct {
	Server  string       `json:"server"`
	Tools   []ToolEntry  `json:"tools,omitempty"`
	Changed []pin.Change `json:"changed,omitempty"`
	Error   *ErrorDetail `json:"error,omitempty"`
	// Invalid are the tools left out for names that break MCP's
	// tool-name format (SEP-986), with the reason.
	Invalid []invalidTool `json:"invalid,omitempty"`
}

// ToolEntry is one hosted tool in list_tools: with detail "full", every
// field the hosted server gave; with "names", its name and the first
// sentence of its description. ExposedName is its name in aggregate mode.
type ToolEntry struct {
	Name         string               `json:"name"`
	ExposedName  string               `json:"exposed_name,omitempty"`
	Title        string               `json:"title,omitempty"`
	Description  string               `json:"description,omitempty"`
	InputSchema  any                  `json:"inputSchema,omitempty"`
	OutputSchema any                  `json:"outputSchema,omitempty"`
	Annotations  *mcp.ToolAnnotations `json:"annotations,omitempty"`
	Icons        []mcp.Icon           `json:"icons,omitempty"`
	Meta         mcp.Meta             `json:"_meta,omitempty"`
	// Flags are the signs of tool poisoning the pin scan found in its
	// definition (docs/security.md): shown, and with "pin_scan": "block"
	// hidden until accepted.
	Flags []pin.Flag `json:"flags,omitempty"`
}

func entryOf(t *mcp.Tool, detail, exposed string) ToolEntry {
	if detail == DetailNames {
		return ToolEntry{Name: t.Name, ExposedName: exposed, Description: describe.FirstSentence(t.Description)}
	}
	return ToolEntry{Name: t.Name, ExposedName: exposed, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations, Icons: t.Icons, Meta: t.Meta}
}

// ErrorDetail is a colibri failure, as the contract shapes colibri_error.
type ErrorDetail = answer.ErrorDetail

// Detail turns any error into the contract's colibri_error (answer.Detail).
func Detail(err error) *ErrorDetail { return answer.Detail(err) }

// Servers reads the registry and describes every server.
func (s *Service) Servers(ctx context.Context) (*ServersResult, error) {
	reg, err := s.admit(ctx)
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
			Source:      srv.Source,
			Lifecycle:   registry.PerRequest,
		}
		if srv.IsPersistent() {
			info.Lifecycle = registry.Persistent
		}
		if srv.IsRemote() {
			info.Args, info.EnvKeys = nil, nil
			info.URL, info.Transport = srv.ShownURL(), srv.Transport
			if info.Transport == "" {
				info.Transport = registry.TransportStreamable
			}
			info.HeaderKeys, info.Auth = srv.HeaderKeys(), srv.Auth()
		} else if info.Args == nil {
			info.Args = []string{}
		}
		if j := srv.Jail; j != nil {
			info.Jail = &JailInfo{Name: j.Name, Path: j.Path, RootPath: j.RootPath, User: j.User, IP4: j.IP4}
		}
		if !srv.IsRemote() {
			info.Sandbox, info.Confinement = srv.Confinement(), s.opts.Host.Confinement(srv)
		}
		if srv.IsPersistent() {
			procs := s.opts.Host.Warm(name)
			if procs == nil {
				procs = []pool.Process{}
			}
			info.Warm = &WarmInfo{Up: len(procs) > 0, Processes: procs}
		}
		if srv.Spare > 0 && !srv.IsPersistent() && !srv.IsRemote() {
			st := s.opts.Host.Spares(name)
			info.Spare = &SpareInfo{Ready: st.Ready}
			if st.Open != nil {
				info.Spare.Error = s.detail(st.Open)
			}
		}
		if s.opts.HideFolders {
			hideFolders(&info)
		}
		out.Servers = append(out.Servers, info)
	}
	if s.opts.HideFolders {
		out.ConfigPath = answer.WithoutFolders(out.ConfigPath)
	}
	return out, nil
}

// hideFolders cuts the absolute paths of info to their last element, for
// callers over HTTP: the command's name, its arguments and the sandbox's
// grants say what runs, never where on this machine (docs/security.md#the-network-face).
func hideFolders(info *ServerInfo) {
	info.Command = answer.WithoutFolders(info.Command)
	if info.Args != nil {
		args := make([]string, len(info.Args))
		for i, a := range info.Args {
			args[i] = answer.WithoutFolders(a)
		}
		info.Args = args
	}
	info.Cwd = answer.WithoutFolders(info.Cwd)
	info.Confinement = answer.WithoutFolders(info.Confinement)
	if sb := info.Sandbox; sb != nil {
		cp := *sb
		cut := func(paths []string) []string {
			if paths == nil {
				return nil
			}
			out := make([]string, len(paths))
			for i, p := range paths {
				out[i] = answer.WithoutFolders(p)
			}
			return out
		}
		cp.Read, cp.Write, cp.Unix = cut(sb.Read), cut(sb.Write), cut(sb.Unix)
		info.Sandbox = &cp
	}
	if j := info.Jail; j != nil {
		cp := *j
		cp.Path, cp.RootPath = answer.WithoutFolders(j.Path), answer.WithoutFolders(j.RootPath)
		info.Jail = &cp
	}
}

// ListTools lists the tools of one server, or of every server concurrently
// when in.Server is "" (docs/protocol.md: "tool" and "detail"). With
// one server, its failure is the error, and so is a tool it does not list
// (unknown_tool, naming the closest and those it has); with all, each
// failure is reported in its entry, and only servers that list in.Tool are
// kept.
func (s *Service) ListTools(ctx context.Context, in ListToolsInput, caller *session.Caller) (*ListToolsResult, error) {
	if s.opts.Aggregate {
		// The lists read below are heard by the catalog, which names their
		// tools: the command line, which serves nothing, gets exposed
		// names too.
		s.cat.Refresh()
	}
	reg, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	detail := in.Detail
	if detail == "" {
		detail = DetailNames
		if in.Server != "" {
			detail = DetailFull
		}
	}
	list := func(srv *registry.Server) ([]*mcp.Tool, []pin.Change, []invalidTool, error) {
		tools, err := s.opts.Host.ListTools(ctx, srv, caller)
		if err != nil {
			return nil, nil, nil, err
		}
		tools, invalid := splitToolNames(tools)
		kept, changed, err := s.screen(ctx, reg, srv, tools)
		return kept, onlyTool(changed, in.Tool), invalid, err
	}
	if in.Server != "" {
		srv, err := lookup(reg, in.Server)
		if err != nil {
			return nil, err
		}
		tools, changed, invalid, err := list(srv)
		if err != nil {
			return nil, err
		}
		entries := s.flagged(reg, srv, tools, s.pinnedOnly(reg, srv, s.entries(srv.Name, tools, in.Tool, detail)))
		if in.Tool != "" && len(entries) == 0 {
			if len(changed) == 1 {
				return nil, toolChanged(srv.Name, in.Tool, changed[0].What, false, s.pinsLocked())
			}
			return nil, host.UnknownTool(srv.Name, in.Tool, tools)
		}
		return &ListToolsResult{Servers: []ServerTools{{Server: in.Server, Tools: entries, Changed: changed, Invalid: invalid}}}, nil
	}
	names := reg.Names()
	all := make([]ServerTools, len(names))
	have := make([][]*mcp.Tool, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			tools, changed, invalid, err := list(reg.Servers[name])
			if err != nil {
				all[i] = ServerTools{Server: name, Error: s.detail(err)}
				return
			}
			have[i] = tools
			all[i] = ServerTools{Server: name, Tools: s.flagged(reg, reg.Servers[name], tools, s.pinnedOnly(reg, reg.Servers[name], s.entries(name, tools, in.Tool, detail))), Changed: changed, Invalid: invalid}
		})
	}
	wg.Wait()
	if in.Tool == "" {
		return &ListToolsResult{Servers: all}, nil
	}
	out := &ListToolsResult{Servers: []ServerTools{}}
	for _, st := range all {
		if st.Error != nil || len(st.Tools) > 0 || len(st.Changed) > 0 {
			out.Servers = append(out.Servers, st)
		}
	}
	if len(out.Servers) == 0 {
		return nil, unknownAnywhere(in.Tool, names, have)
	}
	return out, nil
}

// entries are server's tools as list_tools shows them: only tool, when
// given, at the detail asked for, each with its exposed name in aggregate
// mode.
func (s *Service) entries(server string, tools []*mcp.Tool, tool, detail string) []ToolEntry {
	out := []ToolEntry{}
	for _, t := range tools {
		if tool != "" && t.Name != tool {
			continue
		}
		out = append(out, entryOf(t, detail, s.cat.ExposedName(server, t.Name)))
	}
	return out
}

// onlyTool is changed, or only its entry for tool when tool is given.
func onlyTool(changed []pin.Change, tool string) []pin.Change {
	if tool == "" {
		return changed
	}
	for _, c := range changed {
		if c.Name == tool {
			return []pin.Change{c}
		}
	}
	return nil
}

// unknownAnywhere is the unknown_tool failure of a tool that no server
// lists: it names the closest "server/tool" there is.
func unknownAnywhere(tool string, servers []string, have [][]*mcp.Tool) error {
	var names []string
	owner := map[string]string{} // a tool name -> the first server listing it
	for i, tools := range have {
		for _, t := range tools {
			if _, ok := owner[t.Name]; !ok {
				owner[t.Name] = servers[i]
				names = append(names, t.Name)
			}
		}
	}
	hint := "no server lists a tool of that name"
	if near := suggest.Closest(tool, names); near != "" {
		hint = fmt.Sprintf("did you mean %q (server %q)?", near, owner[near])
	}
	return &failure.Error{Kind: failure.KindUnknownTool, Tool: tool, Phase: failure.PhaseList,
		Err: errors.New("no server lists this tool"), Hint: hint}
}

// CallTool calls tool name of server with args (a JSON object, or empty).
// It refuses with call_disabled, spawning nothing, while the gate is off.
func (s *Service) CallTool(ctx context.Context, server, name string, args json.RawMessage, caller *session.Caller) (*mcp.CallToolResult, error) {
	if !s.opts.ExternalCall {
		return nil, &failure.Error{Kind: failure.KindCallDisabled, Server: server, Tool: name,
			Err: errors.New("calling hosted tools is disabled: start colibri-mcp with --external-call or set COLIBRI_MCP_EXTERNAL_CALL=1 (hosted servers are untrusted third-party code)")}
	}
	reg, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	srv, err := lookup(reg, server)
	if err != nil {
		return nil, err
	}
	if reason := checkToolName(name); reason != "" {
		// No tool colibri offers has such a name: refused before anything
		// is started, whatever the policy.
		return nil, &failure.Error{Kind: failure.KindUnknownTool, Server: server, Tool: clipToolName(name), Phase: failure.PhaseList,
			Err: errors.New("colibri never calls a tool whose name breaks MCP's tool-name format: " + reason)}
	}
	gate, err := s.guardCall(ctx, reg, srv, name, caller)
	if err != nil {
		return nil, err
	}
	// The hosted server receives the arguments as the caller sent them
	// (decoded once, for the schema check, and never encoded again), unless
	// they could mean something else to it than what was checked.
	decoded, sent, err := input.Arguments(args)
	if err != nil {
		kind := failure.KindInvalidArguments
		if errors.Is(err, input.ErrTooManyValues) {
			kind = failure.KindTooLarge
		}
		return nil, &failure.Error{Kind: kind, Server: server, Tool: name, Phase: failure.PhaseCall, Err: err}
	}
	// Strings lifted into the bulk table stay references: the host's schema
	// check reads their values only when the schema looks at what a string
	// says, and the hosted server is sent them lowered, on the way out.
	// In the decoded value a lifted string is a bulk.Lifted, not the
	// reference text: no reader of it can take one for the other.
	if typed, ok := s.opts.Bulk.Typed(decoded).(map[string]any); ok {
		decoded = typed
	}
	return s.opts.Host.CallTool(ctx, srv, name, &session.Arguments{Value: decoded, Raw: sent}, caller, gate)
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
	return nil, &failure.Error{Kind: failure.KindUnknownServer, Server: name,
		Err:  fmt.Errorf("no server named %q in %s", failure.ClipName(name), orDefault(reg.Path, "the registry")),
		Hint: hint}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
