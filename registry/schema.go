package registry

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/colibri-mcp/colibri-mcp/internal/schema"
	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
)

// Schema is the registry's JSON Schema, as shipped in docs/registry.schema.json.
//
//go:embed registry.schema.json
var Schema []byte

var compiled = mustCompile()

// schemaURL names the embedded schema (its $id).
const schemaURL = "https://colibri-mcp.dev/schema/external-mcp.json"

func mustCompile() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		panic("registry: embedded schema: " + err.Error())
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		panic("registry: embedded schema: " + err.Error())
	}
	return c.MustCompile(schemaURL)
}

// SchemaProblems flattens a JSON Schema validation error into its leaf
// problems, each at the instance location it concerns; an unknown key of
// the registry's own schema names the closest key it allows (they are
// usually typos).
func SchemaProblems(ve *jsonschema.ValidationError) []Problem { return schemaProblems(ve, false) }

// schemaProblems is SchemaProblems; with skipNames it leaves out the
// propertyNames problems, which Parse finds itself (nameProblems).
func schemaProblems(ve *jsonschema.ValidationError, skipNames bool) []Problem {
	var ps []Problem
	for _, p := range schema.ProblemsOpts(ve, schema.Options{UnknownKey: unknownKey, SkipNames: skipNames}) {
		ps = append(ps, Problem{Location: p.Location, Message: p.Message})
	}
	return ps
}

func unknownKey(schemaURL, key string) string {
	msg := fmt.Sprintf("unknown key %q", key)
	if near := suggest.Closest(key, schemaKeys(schemaURL)); near != "" {
		msg += fmt.Sprintf(": did you mean %q?", near)
	}
	return msg
}

// schemaDoc is the embedded schema, decoded, to read its key names.
var schemaDoc = func() any {
	var doc any
	_ = json.Unmarshal(Schema, &doc)
	return doc
}()

// schemaKeys are the keys allowed by the object schema whose
// additionalProperties keyword is at url ("…#/$defs/server/additionalProperties").
func schemaKeys(url string) []string {
	base, frag, _ := strings.Cut(url, "#")
	if base != schemaURL {
		return nil // another schema (SchemaProblems serves others too)
	}
	var node any = schemaDoc
	for _, tok := range strings.Split(strings.TrimSuffix(frag, "/additionalProperties"), "/") {
		if tok == "" {
			continue
		}
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)]
	}
	m, _ := node.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// editorShape recognizes an editor's MCP configuration given as a registry:
// Claude Desktop's and Cursor's "mcpServers", VS Code's "servers" whose
// entries have a "type", Zed's "context_servers". It returns the key that
// gave it away, or "".
func editorShape(doc any) string {
	m, ok := doc.(map[string]any)
	if !ok {
		return ""
	}
	for _, k := range []string{"mcpServers", "context_servers"} {
		if _, ok := m[k]; ok {
			return k
		}
	}
	if servers, ok := m["servers"].(map[string]any); ok {
		for _, v := range servers {
			if entry, ok := v.(map[string]any); ok {
				if _, ok := entry["type"]; ok {
					return `"servers" entries with "type"`
				}
			}
		}
	}
	return ""
}

func escapePointer(s string) string { return schema.EscapePointer(s) }

// syntaxProblem turns a JSON syntax error into "line L, column C: ...".
func syntaxProblem(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, se.Offset)
		return fmt.Sprintf("line %d, column %d: invalid JSON: %s", line, col, se.Error())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "invalid JSON: the file ends too early (is it empty or cut short?)"
	}
	return "invalid JSON: " + err.Error()
}

// lineCol is the 1-based line and column of the byte before off: a
// json.SyntaxError's Offset counts the offending byte itself.
func lineCol(data []byte, off int64) (line, col int) {
	off = max(0, min(off-1, int64(len(data))))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
