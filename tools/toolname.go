// checkToolName checks a hosted tool's name against MCP's tool-name
// format (SEP-986: 1 to 128 characters, each an ASCII letter, a digit, `_`,
// `-`, `.` or `/`). A hosted server chooses its names: one outside the
// format may hold look-alike letters (a Cyrillic "е" in "dеlete_user") that
// slip past a deny glob, so colibri never offers or calls such a tool, and
// says why.
//
//	tools, invalid := splitToolNames(listed) // invalid: [{"name", "reason"}]
//	if reason := checkToolName(name); reason != "" { /* refuse the call */ }

package tools

import (
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxToolNameLen is the longest name the format allows, in characters.
const maxToolNameLen = 128

// MaxListed bounds the invalid tools splitToolNames names, and MaxShown each name as
// shown: a server may list many, and long, bad names.
const (
	MaxListed = 50
	MaxShown  = maxToolNameLen
)

// invalidTool is a tool left out for its name.
type invalidTool struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// checkToolName returns why name breaks the tool-name format, or "".
func checkToolName(name string) string {
	if name == "" {
		return "the name is empty"
	}
	if len(name) > maxToolNameLen {
		return fmt.Sprintf("the name is longer than %d characters", maxToolNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/' {
			continue
		}
		r, _ := utf8.DecodeRuneInString(name[i:])
		return fmt.Sprintf("the name holds %q (%U): a tool name is ASCII letters, digits, _, -, . and / only (MCP SEP-986)", r, r)
	}
	return ""
}

// splitToolNames returns the tools whose names keep to the format (tools itself
// when all do) and, for at most MaxListed others, their names (clipped)
// with the reason.
func splitToolNames(tools []*mcp.Tool) (valid []*mcp.Tool, invalid []invalidTool) {
	bad := 0
	for _, t := range tools {
		if checkToolName(t.Name) != "" {
			bad++
		}
	}
	if bad == 0 {
		return tools, nil
	}
	valid = make([]*mcp.Tool, 0, len(tools)-bad)
	for _, t := range tools {
		reason := checkToolName(t.Name)
		if reason == "" {
			valid = append(valid, t)
			continue
		}
		if len(invalid) < MaxListed {
			invalid = append(invalid, invalidTool{Name: clipToolName(t.Name), Reason: reason})
		}
	}
	if bad > MaxListed {
		invalid = append(invalid, invalidTool{Name: "…", Reason: fmt.Sprintf("and %d more tools with invalid names", bad-MaxListed)})
	}
	return valid, invalid
}

// clipToolName shortens a name to MaxShown characters, marking the cut with "…",
// and replaces bytes that are not UTF-8.
func clipToolName(name string) string {
	if !utf8.ValidString(name) {
		name = string([]rune(name)) // invalid bytes become U+FFFD
	}
	if utf8.RuneCountInString(name) <= MaxShown {
		return name
	}
	return string([]rune(name)[:MaxShown-1]) + "…"
}
