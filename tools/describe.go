package tools

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// A model reads the three tools' descriptions before anything else: they
// state the workflow and name the registry's servers, so that the model
// needs no extra request to learn where to start. They are rebuilt when the
// registry changes (catalog.go), and bounded, so that a large registry or a
// long server description never makes them large.
const (
	maxServersNamed     = 25   // servers named in a description; the rest are counted
	maxServerDescRunes  = 120  // of one server's description, in list_tools'
	maxServerBlockBytes = 3000 // the whole list of servers, in list_tools'
	maxRegistryErrRunes = 200  // of a registry error, in a description
)

// view is what the three tools' descriptions depend on.
type view struct {
	reg          *registry.Registry // nil when it cannot be read
	regErr       error
	externalCall bool
	aggregate    bool
}

// ownTools returns colibri's three tools as v describes them.
func ownTools(v view) []*mcp.Tool {
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
	if v.aggregate {
		list += " In this session each hosted tool is also offered as a tool of its own, PREFIX__TOOL " +
			"(its exposed_name here); calling it is calling it through " + CallToolTool + "."
	}
	list += "\n\n" + serverBlock(v)

	call := ""
	if !v.externalCall {
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
func serverNames(v view) string {
	if v.reg == nil {
		return registryProblem(v.regErr)
	}
	names := v.reg.Names()
	if len(names) == 0 {
		return noServers(v.reg)
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
func serverBlock(v view) string {
	if v.reg == nil {
		return registryProblem(v.regErr)
	}
	names := v.reg.Names()
	if len(names) == 0 {
		return noServers(v.reg)
	}
	var b strings.Builder
	b.WriteString("Servers:")
	for i, name := range names {
		line := "\n- " + name
		if d := oneLine(v.reg.Servers[name].Description, maxServerDescRunes); d != "" {
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

func noServers(reg *registry.Registry) string {
	return "The registry (" + orDefault(reg.Path, "the registry file") + ") has no servers yet."
}

func registryProblem(err error) string {
	msg := "unknown error"
	if err != nil {
		msg = oneLine(err.Error(), maxRegistryErrRunes)
	}
	return "The registry cannot be read just now, so every tool answers a config error until it is fixed: " + msg
}

// oneLine is s on one line, control characters made spaces and format
// characters dropped, cut to at most max runes (with "…"). Format
// characters (bidirectional overrides, zero-width spaces and joiners) show
// nothing, or reorder what an editor shows around them ("Trojan Source"):
// a model and a person reading the same description should read the same
// text.
func oneLine(s string, max int) string {
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

// firstSentence is the first sentence of a tool's description: up to the
// first ".", "!" or "?" followed by a space or the end, or the first blank
// line, on one line, at most maxSentenceRunes. A period inside a word
// ("e.g.", "v1.2", "example.com") does not end a sentence.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '.', '!', '?':
			atEnd := i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' || s[i+1] == '\t'
			if atEnd && !abbreviation(s[:i+1]) {
				return oneLine(s[:i+1], maxSentenceRunes)
			}
		}
	}
	return oneLine(s, maxSentenceRunes)
}

// abbreviation reports whether s ends in a word with a period inside it
// ("e.g.", "i.e."): its last period does not end a sentence.
func abbreviation(s string) bool {
	word := s[strings.LastIndexAny(s, " \n\t")+1:]
	return strings.Contains(strings.TrimSuffix(word, "."), ".")
}
