package rewrite

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf"
	"github.com/colibri-mcp/colibri-mcp/internal/jsonsplice"
)

// Each returns data (an editor's file in format f) with the entry of each
// editor name in entries (editor name → colibri's args for it, ending in
// serve --only NAME) replaced by one that runs command with those args over
// stdio, in place: the editor keeps showing, enabling and disabling the
// servers one by one (import --apply --each). Every other byte stays. The
// result is parsed again: an entry that does not run command with its
// args is an error, and nothing should be written.
func Each(data []byte, f editorconf.Format, entries map[string][]string, command string) ([]byte, error) {
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []byte
	var err error
	if f == editorconf.Codex {
		out, err = eachTOML(data, names, entries, command)
	} else {
		out, err = eachJSON(data, f, names, entries, command)
	}
	if err != nil {
		return nil, err
	}
	res, err := editorconf.Parse(out, f, editorconf.Options{})
	if err != nil {
		return nil, fmt.Errorf("the rewritten file would not read back: %w", err)
	}
	for _, n := range names {
		i := slices.IndexFunc(res.Entries, func(e *editorconf.Entry) bool { return e.EditorName == n })
		if i < 0 || res.Entries[i].Command != command || !slices.Equal(res.Entries[i].Args, entries[n]) {
			return nil, fmt.Errorf("server %q does not run colibri in the rewritten file (defined in a way import cannot rewrite): edit it by hand", n)
		}
	}
	return out, nil
}

// entryJSON is the entry that runs command with args in format f.
func entryJSON(f editorconf.Format, command string, args []string) json.RawMessage {
	entry := map[string]any{"command": command, "args": args}
	switch f {
	case editorconf.VSCode:
		entry["type"] = "stdio"
	case editorconf.Zed:
		entry["source"] = "custom"
	}
	raw, _ := json.Marshal(entry)
	return raw
}

func eachJSON(data []byte, f editorconf.Format, names []string, entries map[string][]string, command string) ([]byte, error) {
	path := []string{"mcpServers"}
	switch f {
	case editorconf.VSCode:
		path = []string{"servers"}
		if !jsonHas(data, "servers") && jsonHas(data, "mcp") {
			path = []string{"mcp", "servers"}
		}
	case editorconf.Zed:
		path = []string{"context_servers"}
	}
	out := data
	for _, n := range names {
		obj, _, err := findObject(out, path)
		if err != nil {
			return nil, err
		}
		i := obj.Find(n)
		if i < 0 {
			return nil, fmt.Errorf("the file has no server %q under %q", n, strings.Join(path, "."))
		}
		m := obj.Members[i]
		ind := jsonsplice.LineIndent(out, m.Key)
		out = jsonsplice.Splice(out, m.Value, m.End, jsonsplice.Indent(entryJSON(f, command, entries[n]), ind))
	}
	return out, nil
}

// eachTOML replaces Codex's [mcp_servers.NAME] tables (and their
// sub-tables) where they stand.
func eachTOML(data []byte, names []string, entries map[string][]string, command string) ([]byte, error) {
	lines := strings.SplitAfter(string(data), "\n")
	var out strings.Builder
	skipping := ""
	done := map[string]bool{}
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) } // a TOML basic string
	for _, l := range lines {
		if m := tomlHeader.FindStringSubmatch(l); m != nil {
			skipping = ""
			keys := tomlKeys(m[1])
			if len(keys) >= 2 && keys[0] == "mcp_servers" && slices.Contains(names, keys[1]) {
				skipping = keys[1]
				if !done[keys[1]] && len(keys) == 2 {
					done[keys[1]] = true
					quoted := make([]string, len(entries[keys[1]]))
					for i, a := range entries[keys[1]] {
						quoted[i] = q(a)
					}
					fmt.Fprintf(&out, "%scommand = %s\nargs = [%s]\n\n", l, q(command), strings.Join(quoted, ", "))
				}
			}
		}
		if skipping == "" {
			out.WriteString(l)
		}
	}
	for _, n := range names {
		if !done[n] {
			return nil, fmt.Errorf("the file has no [mcp_servers.%s] table", n)
		}
	}
	return []byte(out.String()), nil
}
