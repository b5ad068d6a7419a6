// Package describe is what a model reads of colibri's own three tools
// before anything else: their names, input schemas and descriptions, which
// state the workflow and name the registry's servers (bounded, whatever the
// registry holds), and the helpers that keep others' words short and on one
// line.
//
//	tools := describe.Tools(describe.View{Registry: reg, ExternalCall: true})
//	line := describe.FirstSentence(hosted.Description)
package describe

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// The tools' names (docs/protocol.md).
const (
	ServersTool   = "colibri_external_mcp_servers"
	ListToolsTool = "colibri_external_mcp_list_tools"
	CallToolTool  = "colibri_external_mcp_call_tool"
)

// A model reads the three tools' descriptions before anything else: they
// state the workflow and name the registry's servers, so that the model
// needs no extra request to learn where to start. They are rebuilt when the
// registry changes (tools/catalog), and bounded, so that a large registry or
// a long server description never makes them large.
const (
	maxServersNamed     = 25   // servers named in a description; the rest are counted
	maxServerDescRunes  = 120  // of one server's description, in list_tools'
	maxServerBlockBytes = 3000 // the whole list of servers, in list_tools'
	maxRegistryErrRunes = 200  // of a registry error, in a description
)

// View is what the three tools' descriptions depend on.
type View struct {
	Registry     *registry.Registry // nil when it cannot be read
	RegistryErr  error              // why it cannot be
	ExternalCall bool               // the call gate
	Aggregate    bool               // hosted tools are offered as tools of their own too
}

// Tools returns colibri's three tools as v describes them, in the order of
// the workflow. Each InputSchema is a json.RawMessage.
func Tools(v View) []*mcp.Tool {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
	names := serverNames(v)

	// Each states the workflow, from where it stands in it: a model may
	// read any one of them first.
	servers := "colibri-mcp hosts other MCP servers and reaches their tools for you. Start here: this lists " +
		"each hosted server with its description, its command (environment variable names, jail) or URL (transport, header names, auth kind; never a value), " +
		"and whether calling their tools is enabled. The workflow: this tool → " + ListToolsTool +
		" with a server (its tools, each with its inputSchema) → " + CallToolTool +
		" with that server, a tool's name and arguments that match the tool's inputSchema.\n\n" + names

	list := "List the tools of colibri's hosted MCP servers: step 2 of " + ServersTool + " → this → " + CallToolTool +
		" (whose \"arguments\" must match the inputSchema listed here). With \"server\", each tool comes with its " +
		"full description and inputSchema; without it, every server is listed with each tool's name and first " +
		"sentence only. \"tool\" keeps one tool; \"detail\" (\"names\" or \"full\") overrides the default. " +
		"Listing is always allowed, and may start the server."
	if v.Aggregate {
		list += " In this session each hosted tool is also offered as a tool of its own, PREFIX__TOOL " +
			"(its exposed_name here); calling it is calling it through " + CallToolTool + "."
	}
	list += "\n\n" + serverBlock(v)

	call := ""
	if !v.ExternalCall {
		call = "Calling is disabled in this session: colibri-mcp was started without --external-call " +
			"(COLIBRI_MCP_EXTERNAL_CALL=1), so every call returns the error call_disabled and starts nothing. " +
			"Listing still works.\n\n"
	}
	call += "Call one tool of a hosted MCP server and return its result unchanged: step 3 of " + ServersTool +
		" → " + ListToolsTool + " with the server → this, with \"server\" and \"name\" as list_tools shows them " +
		"and \"arguments\" that match that tool's inputSchema (checked before the call). Hosted servers are " +
		"third-party code.\n\n" + names

	return []*mcp.Tool{
		{
			Name:        ServersTool,
			Title:       "Hosted MCP servers",
			Description: servers,
			InputSchema: serversInput,
			Annotations: readOnly,
		},
		{
			Name:        ListToolsTool,
			Title:       "List a hosted server's tools",
			Description: list,
			InputSchema: listToolsInput,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)},
		},
		{
			Name:        CallToolTool,
			Title:       "Call a hosted server's tool",
			Description: call,
			InputSchema: callToolInput,
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
		},
	}
}

// serverNames is one line naming the servers (at most maxServersNamed).
func serverNames(v View) string {
	if v.Registry == nil {
		return registryProblem(v.RegistryErr)
	}
	names := v.Registry.Names()
	if len(names) == 0 {
		return noServers(v.Registry)
	}
	shown := names[:min(len(names), maxServersNamed)]
	line := "Servers: " + strings.Join(shown, ", ")
	if more := len(names) - len(shown); more > 0 {
		line += fmt.Sprintf(", and %d more (%s lists them all)", more, ServersTool)
	}
	return line + "."
}

// serverBlock names each server with its description: one line each, each
// description cut to maxServerDescRunes, at most maxServersNamed lines and
// maxServerBlockBytes in all; what is left out is counted.
func serverBlock(v View) string {
	if v.Registry == nil {
		return registryProblem(v.RegistryErr)
	}
	names := v.Registry.Names()
	if len(names) == 0 {
		return noServers(v.Registry)
	}
	var b strings.Builder
	b.WriteString("Servers:")
	for i, name := range names {
		line := "\n- " + name
		if d := OneLine(v.Registry.Servers[name].Description, maxServerDescRunes); d != "" {
			line += ": " + d
		}
		if i >= maxServersNamed || b.Len()+len(line) > maxServerBlockBytes {
			fmt.Fprintf(&b, "\n- and %d more (%s lists them all)", len(names)-i, ServersTool)
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func noServers(reg *registry.Registry) string {
	return "The registry (" + orDefault(reg.Path, "the registry file") + ") has no servers yet."
}

func registryProblem(err error) string {
	msg := "unknown error"
	if err != nil {
		msg = OneLine(err.Error(), maxRegistryErrRunes)
	}
	return "The registry cannot be read just now, so every tool answers a config error until it is fixed: " + msg
}

// OneLine is s on one line, control characters made spaces and format
// characters dropped, cut to at most max runes (with "…"). Format
// characters (bidirectional overrides, zero-width spaces and joiners) show
// nothing, or reorder what an editor shows around them ("Trojan Source"):
// a model and a person reading the same description should read the same
// text.
func OneLine(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case unicode.IsControl(r):
			return ' '
		case unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return strings.TrimRightFunc(string(r[:max-1]), unicode.IsSpace) + "…"
}

// maxSentenceRunes bounds a first sentence (a description that never ends
// one is cut there).
const maxSentenceRunes = 200

// FirstSentence is the first sentence of a tool's description: up to the
// first ".", "!" or "?" followed by a space or the end, or the first blank
// line, on one line, at most maxSentenceRunes. A period inside a word
// ("e.g.", "v1.2", "example.com") does not end a sentence.
func FirstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '.', '!', '?':
			atEnd := i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' || s[i+1] == '\t'
			if atEnd && !abbreviation(s[:i+1]) {
				return OneLine(s[:i+1], maxSentenceRunes)
			}
		}
	}
	return OneLine(s, maxSentenceRunes)
}

// abbreviation reports whether s ends in a word with a period inside it
// ("e.g.", "i.e."): its last period does not end a sentence.
func abbreviation(s string) bool {
	word := s[strings.LastIndexAny(s, " \n\t")+1:]
	return strings.Contains(strings.TrimSuffix(word, "."), ".")
}

// Input schemas of the three tools. They are written out, not inferred, so
// that they are exactly the contract's and snapshotted by a golden test.
var (
	serversInput = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

	listToolsInput = json.RawMessage(`{
  "type": "object",
  "properties": {
    "server": {"type": "string", "description": "The registry name of one server. Without it, every server is listed, concurrently."},
    "tool": {"type": "string", "description": "Keep only the tool of this name (its name as the hosted server lists it)."},
    "detail": {"type": "string", "enum": ["names", "full"], "description": "names: each tool's name and the first sentence of its description (the default without server); full: also its whole description, inputSchema and annotations (the default with server)."},
    "query": {"type": "string", "maxLength": 1000, "description": "Words describing the tool you need: searches every server's tools (or server's) by name, title and description, among the lists colibri already read, and returns the best 10 matches with their servers; unseen names the servers not read yet. Not with tool."}
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

func ptr[T any](v T) *T { return &v }
