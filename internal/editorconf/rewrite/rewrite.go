// Package rewrite rewrites an editor's MCP configuration once its servers
// are imported (colibri-mcp import --apply): the imported servers go, one
// "colibri" entry that runs colibri comes, and every other byte (comments,
// trailing commas, layout, the editor's other settings and servers) stays:
// JSONC objects are spliced by offset (internal/jsonsplice), Codex's TOML
// tables are cut by lines. It is pure: bytes in, bytes out.
//
//	out, err := rewrite.Apply(data, editorconf.VSCode, []string{"github"}, "/usr/local/bin/colibri-mcp",
//		rewrite.KeepArgs([]string{"--external-config", "/home/me/.config/colibri/external-mcp.json"}, own.Args))
package rewrite

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf"
	"github.com/colibri-mcp/colibri-mcp/internal/editorconf/syntax"
	"github.com/colibri-mcp/colibri-mcp/internal/jsonsplice"
)

// Apply returns data (an editor's file in format f) without the servers
// named remove (their names in the editor's file) and with one "colibri"
// entry that runs command with args over stdio (an entry of that name is
// replaced). The result is parsed again: a server that is still there, or a
// colibri entry that is not, is an error, and nothing should be written.
func Apply(data []byte, f editorconf.Format, remove []string, command string, args []string) ([]byte, error) {
	remove = append(slices.Clone(remove), editorconf.ColibriEntry)
	var out []byte
	var err error
	if f == editorconf.Codex {
		out, err = applyTOML(data, remove, command, args)
	} else {
		out, err = applyJSON(data, f, remove, command, args)
	}
	if err != nil {
		return nil, err
	}
	res, err := editorconf.Parse(out, f, editorconf.Options{})
	if err != nil {
		return nil, fmt.Errorf("the rewritten file would not read back: %w", err)
	}
	var colibri bool
	for _, e := range res.Entries {
		if e.EditorName == editorconf.ColibriEntry {
			colibri = true
		} else if slices.Contains(remove, e.EditorName) {
			return nil, fmt.Errorf("server %q is still in the rewritten file (defined in a way import cannot remove): edit it by hand", e.EditorName)
		}
	}
	if !colibri {
		return nil, fmt.Errorf("the rewritten file holds no %q entry: edit it by hand", editorconf.ColibriEntry)
	}
	return out, nil
}

func applyJSON(data []byte, f editorconf.Format, remove []string, command string, args []string) ([]byte, error) {
	entry := map[string]any{"command": command, "args": args}
	path := []string{"mcpServers"}
	switch f {
	case editorconf.VSCode:
		entry["type"] = "stdio"
		path = []string{"servers"}
		if !jsonHas(data, "servers") && jsonHas(data, "mcp") {
			path = []string{"mcp", "servers"}
		}
	case editorconf.Zed:
		entry["source"] = "custom"
		path = []string{"context_servers"}
	}
	raw, _ := json.Marshal(entry)
	out := data
	for {
		obj, plain, err := findObject(out, path)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(obj.Members, func(m jsonsplice.Member) bool { return slices.Contains(remove, m.Name) })
		if i < 0 {
			ind := obj.MemberIndent(out, jsonsplice.LineIndent(out, obj.Open)+"  ")
			body := append([]byte(fmt.Sprintf("%q: ", editorconf.ColibriEntry)), jsonsplice.Indent(raw, ind)...)
			return obj.InsertFirst(out, ind, body), nil
		}
		out = obj.RemoveMember(out, plain, i)
	}
}

// findObject is the object at path (keys from the top) in JSONC data, its
// offsets valid in data.
func findObject(data []byte, path []string) (jsonsplice.Object, []byte, error) {
	plain, err := syntax.StripJSONC(data)
	if err != nil {
		return jsonsplice.Object{}, nil, err
	}
	obj, err := jsonsplice.Parse(plain, 0)
	for i, k := range path {
		if err != nil {
			return jsonsplice.Object{}, nil, fmt.Errorf("the file is not a JSON object at %q: %w", strings.Join(path[:i], "."), err)
		}
		j := obj.Find(k)
		if j < 0 {
			return jsonsplice.Object{}, nil, fmt.Errorf("the file has no %q", strings.Join(path[:i+1], "."))
		}
		obj, err = jsonsplice.Parse(plain, obj.Members[j].Value)
	}
	return obj, plain, err
}

func jsonHas(data []byte, key string) bool {
	plain, err := syntax.StripJSONC(data)
	if err != nil {
		return false
	}
	obj, err := jsonsplice.Parse(plain, 0)
	return err == nil && obj.Find(key) >= 0
}

// tomlHeader is a table header line: [a.b."c"].
var tomlHeader = regexp.MustCompile(`^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$`)

// applyTOML removes Codex's [mcp_servers.NAME] tables (and their
// sub-tables) by lines, and appends colibri's.
func applyTOML(data []byte, remove []string, command string, args []string) ([]byte, error) {
	lines := strings.SplitAfter(string(data), "\n")
	var out strings.Builder
	skipping := false
	for _, l := range lines {
		if m := tomlHeader.FindStringSubmatch(l); m != nil {
			skipping = false
			keys := tomlKeys(m[1])
			if len(keys) >= 2 && keys[0] == "mcp_servers" && slices.Contains(remove, keys[1]) {
				skipping = true
			}
		}
		if !skipping {
			out.WriteString(l)
		}
	}
	s := strings.TrimRight(out.String(), "\n")
	if s != "" {
		s += "\n\n"
	}
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) } // a TOML basic string
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = q(a)
	}
	s += fmt.Sprintf("[mcp_servers.%s]\ncommand = %s\nargs = [%s]\n", editorconf.ColibriEntry, q(command), strings.Join(quoted, ", "))
	return []byte(s), nil
}

// tomlKeys splits a dotted TOML key (bare or quoted parts).
func tomlKeys(k string) []string {
	var keys []string
	for _, part := range strings.Split(k, ".") {
		part = strings.TrimSpace(part)
		if len(part) >= 2 && (part[0] == '"' || part[0] == '\'') {
			part = part[1 : len(part)-1]
		}
		keys = append(keys, part)
	}
	return keys
}

// KeepArgs is args (colibri's settings that import sets) followed by the
// arguments of old (the entry it replaces) that set something else: the
// user's --aggregate or --timeout survive; an old --external-config, and an
// old flag that args sets anew (--env-file, --external-call), do not.
func KeepArgs(args, old []string) []string {
	set := map[string]bool{"--external-config": true}
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			set[a] = true
		}
	}
	takesValue := map[string]bool{"--external-config": true, "--env-file": true}
	out := slices.Clone(args)
	for i := 0; i < len(old); i++ {
		name, _, eq := strings.Cut(old[i], "=")
		if set[name] {
			if !eq && takesValue[name] {
				i++ // and its value
			}
			continue
		}
		out = append(out, old[i])
	}
	return out
}
