package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Input schemas of the three tools. They are written out, not inferred, so
// that they are exactly the contract's and snapshotted by a golden test.
var (
	serversInput = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

	listToolsInput = json.RawMessage(`{
  "type": "object",
  "properties": {
    "server": {"type": "string", "description": "The registry name of one server. Without it, every server is listed, concurrently."}
  },
  "additionalProperties": false
}`)

	callToolInput = json.RawMessage(`{
  "type": "object",
  "properties": {
    "server": {"type": "string", "description": "The registry name of the server."},
    "name": {"type": "string", "description": "The hosted tool to call, as colibri_external_mcp_list_tools shows it."},
    "arguments": {"type": "object", "description": "The hosted tool's arguments, checked against its inputSchema before the call."}
  },
  "required": ["server", "name"],
  "additionalProperties": false
}`)
)

// Tools returns the three tools' definitions.
func Tools() []*mcp.Tool {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
	return []*mcp.Tool{
		{
			Name:        ServersTool,
			Title:       "Hosted MCP servers",
			Description: "List the external MCP servers in colibri's registry: name, command, arguments, environment variable names (never values), working directory, jail, and whether calling their tools is enabled.",
			InputSchema: serversInput,
			Annotations: readOnly,
		},
		{
			Name:        ListToolsTool,
			Title:       "List a hosted server's tools",
			Description: "Start an external MCP server from colibri's registry and list its tools as it reports them. Without \"server\", every server is listed. Always allowed.",
			InputSchema: listToolsInput,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)},
		},
		{
			Name:        CallToolTool,
			Title:       "Call a hosted server's tool",
			Description: "Call one tool of an external MCP server from colibri's registry and return its result unchanged. Needs colibri-mcp started with --external-call (COLIBRI_MCP_EXTERNAL_CALL=1): hosted servers are third-party code.",
			InputSchema: callToolInput,
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// NewServer returns colibri's MCP server with the three tools.
func (s *Service) NewServer(version string) *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "colibri-mcp", Title: "colibri-mcp", Version: version}, &mcp.ServerOptions{
		Logger:       s.log,
		Instructions: "colibri-mcp hosts other MCP servers. Use colibri_external_mcp_servers to see them, colibri_external_mcp_list_tools to see their tools, and colibri_external_mcp_call_tool to call one.",
		Capabilities: &mcp.ServerCapabilities{
			Logging: &mcp.LoggingCapabilities{}, // hosted servers' logs are forwarded
			Tools:   &mcp.ToolCapabilities{},    // the three tools never change
		},
	})
	// Remember the level each caller sets, to pass it on to hosted servers.
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "logging/setLevel" && err == nil {
				if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok {
					s.levels.set(server, req.GetSession().(*mcp.ServerSession), p.Level)
				}
			}
			return res, err
		}
	})
	t := Tools()
	server.AddTool(t[0], s.handleServers)
	server.AddTool(t[1], s.handleListTools)
	server.AddTool(t[2], s.handleCallTool)
	return server
}

func (s *Service) handleServers(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct{}
	if err := decodeInput(ServersTool, req.Params.Arguments, &in); err != nil {
		return ErrorResult(err), nil
	}
	out, err := s.Servers(ctx)
	if err != nil {
		return ErrorResult(err), nil
	}
	return structured(out, false), nil
}

func (s *Service) handleListTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Server string `json:"server"`
	}
	if err := decodeInput(ListToolsTool, req.Params.Arguments, &in); err != nil {
		return ErrorResult(err), nil
	}
	out, err := s.ListTools(ctx, in.Server, s.callerOf(ctx, req))
	if err != nil {
		return ErrorResult(err), nil
	}
	return structured(out, false), nil
}

func (s *Service) handleCallTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Server    string          `json:"server"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := decodeInput(CallToolTool, req.Params.Arguments, &in); err != nil {
		return ErrorResult(err), nil
	}
	res, err := s.CallTool(ctx, in.Server, in.Name, in.Arguments, s.callerOf(ctx, req))
	if err != nil {
		if host.KindOf(err) == host.KindCancelled {
			// Over stdio this result is never sent (internal/stdioserve):
			// the caller cancelled the request and expects no response.
			s.log.Debug("call cancelled", "server", in.Server, "tool", in.Name)
		}
		return ErrorResult(err), nil
	}
	return res, nil
}

// inputSchemas are the three tools' input schemas, compiled once: colibri
// checks its own inputs against exactly what it advertises.
var inputSchemas = func() map[string]*jsonschema.Schema {
	m := map[string]*jsonschema.Schema{}
	for _, t := range Tools() {
		raw := t.InputSchema.(json.RawMessage)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			panic(fmt.Sprintf("tools: %s: input schema: %v", t.Name, err))
		}
		c := jsonschema.NewCompiler()
		url := "colibri:///" + t.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			panic(fmt.Sprintf("tools: %s: input schema: %v", t.Name, err))
		}
		m[t.Name] = c.MustCompile(url)
	}
	return m
}()

// decodeInput checks a tool's own arguments against its input schema (an
// unknown key, a wrong type or a missing key is invalid_arguments naming the
// JSON location), then decodes them into v.
func decodeInput(tool string, raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	invalid := func(msg string) error {
		return &host.Error{Kind: host.KindInvalidArguments, Err: fmt.Errorf("%s: arguments: %s", tool, msg)}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return invalid("invalid JSON: " + err.Error())
	}
	if m, ok := doc.(map[string]any); ok {
		// A null optional key ("arguments": null, as some clients send for
		// "no arguments") is taken as absent.
		for k, v := range m {
			if v == nil {
				delete(m, k)
			}
		}
	}
	if err := inputSchemas[tool].Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return invalid(err.Error())
		}
		var msgs []string
		for _, p := range registry.SchemaProblems(ve) {
			msgs = append(msgs, p.String())
		}
		return invalid(strings.Join(msgs, "; "))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalid(err.Error()) // cannot happen once the schema passed
	}
	return nil
}

// ErrorResult is a colibri failure as the contract shapes it: isError, a text
// beginning "colibri: KIND: ", and structuredContent {"colibri_error": …}.
func ErrorResult(err error) *mcp.CallToolResult {
	d := Detail(err)
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("colibri: %s: %s", d.Kind, d.Message)}},
		StructuredContent: map[string]any{"colibri_error": d},
	}
}

// structured is a result whose structuredContent is v, with the same JSON as
// text content for clients that read only text.
func structured(v any, isError bool) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return ErrorResult(fmt.Errorf("encoding the result: %w", err))
	}
	return &mcp.CallToolResult{
		IsError:           isError,
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}
}

// callerOf describes the calling client to the host: where the hosted
// server's progress and logs go, and which of its requests may be forwarded
// (only those the caller advertised). Everything is sent under ctx, the
// caller's own request: over Streamable HTTP that is what puts a message on
// that request's stream, and not on another caller's.
func (s *Service) callerOf(ctx context.Context, req *mcp.CallToolRequest) *host.Caller {
	ss := req.Session
	c := &host.Caller{
		LogLevel: s.levels.get(ss),
		Log: func(_ context.Context, p *mcp.LoggingMessageParams) {
			// ServerSession.Log drops messages below the level the caller set.
			_ = ss.Log(ctx, p)
		},
	}
	if token := req.Params.GetProgressToken(); token != nil {
		c.Progress = func(_ context.Context, p *mcp.ProgressNotificationParams) {
			relay := *p
			relay.ProgressToken = token // as it came off the wire (see SDK-NOTES pitfall 7)
			relay.Meta = nil
			_ = ss.NotifyProgress(ctx, &relay)
		}
	}
	init := ss.InitializeParams()
	if init == nil || init.Capabilities == nil {
		return c
	}
	caps := init.Capabilities
	if caps.Sampling != nil {
		c.CreateMessage = func(fwd context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			ctx, done := within(ctx, fwd)
			defer done()
			return ss.CreateMessage(ctx, p)
		}
	}
	if caps.Elicitation != nil {
		c.Elicit = func(fwd context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			ctx, done := within(ctx, fwd)
			defer done()
			return ss.Elicit(ctx, p)
		}
	}
	if caps.RootsV2 != nil || caps.Roots.ListChanged {
		c.ListRoots = func(fwd context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
			ctx, done := within(ctx, fwd)
			defer done()
			return ss.ListRoots(ctx, p)
		}
	}
	return c
}

// within is the caller's request context req, also ended when fwd (the
// forwarded request's, which the host ends with its call) ends.
func within(req, fwd context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(req)
	stop := context.AfterFunc(fwd, cancel)
	return ctx, func() { stop(); cancel() }
}

// logLevels remembers the logging level each caller's session set.
type logLevels struct {
	mu sync.Mutex
	m  map[*mcp.ServerSession]mcp.LoggingLevel
}

func (l *logLevels) set(server *mcp.Server, ss *mcp.ServerSession, level mcp.LoggingLevel) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[*mcp.ServerSession]mcp.LoggingLevel{}
	}
	// Forget sessions that have ended (setLevel is rare: this stays cheap).
	live := map[*mcp.ServerSession]bool{}
	for s := range server.Sessions() {
		live[s] = true
	}
	for s := range l.m {
		if !live[s] {
			delete(l.m, s)
		}
	}
	l.m[ss] = level
}

func (l *logLevels) get(ss *mcp.ServerSession) mcp.LoggingLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[ss]
}
