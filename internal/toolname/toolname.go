// Package toolname checks a hosted tool's name against MCP's tool-name
// format (SEP-986: 1 to 128 characters, each an ASCII letter, a digit, `_`,
// `-`, `.` or `/`). A hosted server chooses its names: one outside the
// format may hold look-alike letters (a Cyrillic "е" in "dеlete_user") that
// slip past a deny glob, so colibri never offers or calls such a tool, and
// says why.
//
//	tools, invalid := toolname.Split(listed) // invalid: [{"name", "reason"}]
//	if reason := toolname.Check(name); reason != "" { /* refuse the call */ }
package toolname

import (
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLen is the longest name the format allows, in characters.
const MaxLen = 128

// MaxListed bounds the invalid tools Split names, and MaxShown each name as
// shown: a server may list many, and long, bad names.
const (
	MaxListed = 50
	MaxShown  = MaxLen
)

// Invalid is a tool left out for its name.
type Invalid struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Check returns why name breaks the tool-name format, or "".
func Check(name string) string {
	if name == "" {
		return "the name is empty"
	}
	if len(name) > MaxLen {
		return fmt.Sprintf("the name is longer than %d characters", MaxLen)
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

// Split returns the tools whose names keep to the format (tools itself
// when all do) and, for at most MaxListed others, their names (clipped)
// with the reason.
func Split(tools []*mcp.Tool) (valid []*mcp.Tool, invalid []Invalid) {
	bad := 0
	for _, t := range tools {
		if Check(t.Name) != "" {
			bad++
		}
	}
	if bad == 0 {
		return tools, nil
	}
	valid = make([]*mcp.Tool, 0, len(tools)-bad)
	for _, t := range tools {
		reason := Check(t.Name)
		if reason == "" {
			valid = append(valid, t)
			continue
		}
		if len(invalid) < MaxListed {
			invalid = append(invalid, Invalid{Name: Clip(t.Name), Reason: reason})
		}
	}
	if bad > MaxListed {
		invalid = append(invalid, Invalid{Name: "…", Reason: fmt.Sprintf("and %d more tools with invalid names", bad-MaxListed)})
	}
	return valid, invalid
}

// Clip shortens a name to MaxShown characters, marking the cut with "…",
// and replaces bytes that are not UTF-8.
func Clip(name string) string {
	if !utf8.ValidString(name) {
		name = string([]rune(name)) // invalid bytes become U+FFFD
	}
	if utf8.RuneCountInString(name) <= MaxShown {
		return name
	}
	return string([]rune(name)[:MaxShown-1]) + "…"
}
