package editorconf

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf/syntax"
)

// DetectError is a file whose format cannot be told from its content: the
// caller should ask for --from.
type DetectError struct{ Reason string }

func (e *DetectError) Error() string { return e.Reason }

// Detect tells a file's format from its name and content: a .toml file, or
// TOML with [mcp_servers.…] tables, is Codex's; JSON with "mcpServers" is
// Claude Desktop's (Cursor's when the file is in a .cursor folder), with
// "context_servers" Zed's, with "servers" entries that have a "type" (or
// with "inputs", or "mcp": {"servers"}) VS Code's. JSON that cannot be read
// is an *Error with its line and column; a file that matches none, or more
// than one, is a *DetectError.
func Detect(data []byte, filename string) (Format, error) {
	if strings.EqualFold(filepath.Ext(filename), ".toml") {
		return Codex, nil
	}
	doc, jsonErr := decodeJSONC(data)
	if jsonErr != nil {
		var t map[string]any
		if syntax.TOMLNesting(data) != nil {
			return "", jsonErr
		}
		if _, err := toml.Decode(string(data), &t); err == nil {
			if _, ok := t["mcp_servers"]; ok {
				return Codex, nil
			}
		}
		return "", jsonErr
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return "", &DetectError{Reason: "the file holds " + typeName(doc, false) + ", not a JSON object"}
	}
	var found []Format
	var shapes []string
	if _, ok := root["mcpServers"]; ok {
		f := Claude
		if filepath.Base(filepath.Dir(filename)) == ".cursor" {
			f = Cursor
		}
		found, shapes = append(found, f), append(shapes, `"mcpServers"`)
	}
	if _, ok := root["context_servers"]; ok {
		found, shapes = append(found, Zed), append(shapes, `"context_servers"`)
	}
	vscode := false
	if mcp, ok := root["mcp"].(map[string]any); ok {
		_, vscode = mcp["servers"]
	}
	servers, hasServers := root["servers"].(map[string]any)
	if hasServers && !vscode {
		_, inputs := root["inputs"]
		vscode = inputs
		for _, v := range servers {
			if e, ok := v.(map[string]any); ok {
				if _, typed := e["type"]; typed {
					vscode = true
				}
			}
		}
		if !vscode && len(found) == 0 {
			return "", &DetectError{Reason: `its "servers" entries have no "type": it may be a VS Code mcp.json or a colibri registry already`}
		}
	}
	if vscode {
		found, shapes = append(found, VSCode), append(shapes, `"servers"`)
	}
	switch len(found) {
	case 0:
		return "", &DetectError{Reason: `it has none of "mcpServers", "servers", "context_servers" or [mcp_servers.NAME]`}
	case 1:
		return found[0], nil
	}
	return "", &DetectError{Reason: fmt.Sprintf("it has %s: more than one editor's shape", strings.Join(shapes, " and "))}
}

// WorkspaceOf is the workspace folder of a project-level file
// (PROJECT/.vscode/mcp.json, PROJECT/.cursor/mcp.json): what VS Code and
// Cursor put in ${workspaceFolder}. It is "" for any other file.
func WorkspaceOf(path string) string {
	dir := filepath.Dir(path)
	switch filepath.Base(dir) {
	case ".vscode", ".cursor":
		return filepath.Dir(dir)
	}
	return ""
}

// Locations are where an editor keeps its MCP configuration on goos, most
// specific first: a project's file in cwd before the user's own. getenv
// reads XDG_CONFIG_HOME and CODEX_HOME; it may be nil.
func Locations(f Format, goos, home, cwd string, getenv func(string) string) []string {
	env := func(k string) string {
		if getenv == nil {
			return ""
		}
		return getenv(k)
	}
	// config is where Linux and the BSDs keep per-user settings.
	config := env("XDG_CONFIG_HOME")
	if config == "" || !filepath.IsAbs(config) {
		config = filepath.Join(home, ".config")
	}
	appSupport := filepath.Join(home, "Library", "Application Support") // macOS
	switch f {
	case Claude:
		if goos == "darwin" {
			return []string{filepath.Join(appSupport, "Claude", "claude_desktop_config.json")}
		}
		return []string{filepath.Join(config, "Claude", "claude_desktop_config.json")}
	case Cursor:
		return []string{filepath.Join(cwd, ".cursor", "mcp.json"), filepath.Join(home, ".cursor", "mcp.json")}
	case VSCode:
		user := filepath.Join(config, "Code", "User", "mcp.json")
		if goos == "darwin" {
			user = filepath.Join(appSupport, "Code", "User", "mcp.json")
		}
		return []string{filepath.Join(cwd, ".vscode", "mcp.json"), user}
	case Zed:
		if goos == "darwin" { // ~/.config/zed, whatever XDG_CONFIG_HOME says
			return []string{filepath.Join(home, ".config", "zed", "settings.json")}
		}
		return []string{filepath.Join(config, "zed", "settings.json")}
	case Codex:
		if h := env("CODEX_HOME"); h != "" && filepath.IsAbs(h) {
			return []string{filepath.Join(h, "config.toml")}
		}
		return []string{filepath.Join(home, ".codex", "config.toml")}
	}
	return nil
}
