package termview

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/tools"
)

// Tool shows one hosted tool of server as a person reads it (describe):
// what it does, what it declares about itself, the arguments it takes, and
// a call to start from.
func Tool(w io.Writer, server string, t tools.ToolEntry) {
	fmt.Fprintf(w, "%s / %s", server, t.Name)
	if t.Title != "" {
		fmt.Fprintf(w, " — %s", t.Title)
	}
	fmt.Fprintln(w)
	if t.Description != "" {
		fmt.Fprintf(w, "\n%s\n", indent(strings.TrimSpace(t.Description)))
	}
	if a := annotations(t.Annotations); a != "" {
		fmt.Fprintf(w, "\nannotations: %s\n", a)
	}
	fmt.Fprintln(w, "\narguments:")
	SchemaTable(w, t.InputSchema)
	fmt.Fprintf(w, "\ncall it with:\n  colibri-mcp --external-call call %s %s --args '%s'\n", server, t.Name, exampleArgs(t.InputSchema))
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// annotations lists the hints a tool declares, leaving out what it does not
// say (MCP's defaults then apply).
func annotations(a *mcp.ToolAnnotations) string {
	if a == nil {
		return ""
	}
	var parts []string
	if a.ReadOnlyHint {
		parts = append(parts, "readOnlyHint")
	}
	if a.DestructiveHint != nil {
		parts = append(parts, fmt.Sprintf("destructiveHint=%v", *a.DestructiveHint))
	}
	if a.IdempotentHint {
		parts = append(parts, "idempotentHint")
	}
	if a.OpenWorldHint != nil {
		parts = append(parts, fmt.Sprintf("openWorldHint=%v", *a.OpenWorldHint))
	}
	return strings.Join(parts, ", ")
}

// schemaProps is the part of an object schema that the table shows; a
// property's own properties (an object) and items (an array) are read too,
// so that nested arguments are shown, not flattened to "object".
type schemaProps struct {
	Type        any                     `json:"type"`
	Description string                  `json:"description"`
	Enum        []any                   `json:"enum"`
	Default     any                     `json:"default"`
	Properties  map[string]*schemaProps `json:"properties"`
	Required    []string                `json:"required"`
	Items       *schemaProps            `json:"items"`
}

func readSchema(schema any) schemaProps {
	var p schemaProps
	b, _ := json.Marshal(schema)
	_ = json.Unmarshal(b, &p)
	return p
}

// propNames are the schema's properties, required ones first.
func propNames(p schemaProps) []string {
	names := make([]string, 0, len(p.Properties))
	for n := range p.Properties {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		ra, rb := slices.Contains(p.Required, a), slices.Contains(p.Required, b)
		if ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return names
}

// Bounds of the table: the hosted server wrote the schema.
const (
	maxSchemaDepth = 6
	maxSchemaRows  = 200
)

// SchemaTable shows an input schema's properties as a table, required ones
// first, nested ones as rows of their own (query.text, tags[].name), within
// maxSchemaDepth and maxSchemaRows.
func SchemaTable(w io.Writer, schema any) {
	p := readSchema(schema)
	if len(p.Properties) == 0 {
		fmt.Fprintln(w, "  (none)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tTYPE\tREQUIRED\tDESCRIPTION")
	rows := 0
	var walk func(p *schemaProps, prefix string, depth int)
	walk = func(p *schemaProps, prefix string, depth int) {
		for _, n := range propNames(*p) {
			prop := p.Properties[n]
			if prop == nil {
				continue
			}
			if rows++; rows > maxSchemaRows {
				if rows == maxSchemaRows+1 {
					fmt.Fprintf(tw, "  …\t\t\t(more than %d arguments: see --json)\n", maxSchemaRows)
				}
				return
			}
			req := "no"
			if slices.Contains(p.Required, n) {
				req = "yes"
			}
			fmt.Fprintf(tw, "  %s%s\t%s\t%s\t%s\n", prefix, n, typeOf(prop), req, propDescription(prop))
			if depth >= maxSchemaDepth {
				continue
			}
			switch {
			case len(prop.Properties) > 0:
				walk(prop, prefix+n+".", depth+1)
			case prop.Items != nil && len(prop.Items.Properties) > 0:
				walk(prop.Items, prefix+n+"[].", depth+1)
			}
		}
	}
	walk(&p, "", 0)
	tw.Flush()
}

// typeOf is a property's type as the table shows it: "array of string".
func typeOf(p *schemaProps) string {
	typ := "any"
	switch t := p.Type.(type) {
	case string:
		typ = t
	case []any:
		var ts []string
		for _, x := range t {
			ts = append(ts, fmt.Sprint(x))
		}
		typ = strings.Join(ts, "|")
	}
	if typ == "array" && p.Items != nil {
		if it, ok := p.Items.Type.(string); ok {
			typ += " of " + it
		}
	}
	return typ
}

func propDescription(p *schemaProps) string {
	desc := FirstLine(p.Description)
	if len(p.Enum) > 0 {
		b, _ := json.Marshal(p.Enum)
		desc = strings.TrimSpace(desc + " one of " + string(b))
	}
	if p.Default != nil {
		b, _ := json.Marshal(p.Default)
		desc = strings.TrimSpace(desc + " (default " + string(b) + ")")
	}
	return desc
}

// exampleArgs is a JSON object with the required arguments, each holding a
// placeholder of its type: a start to edit, not a valid call.
func exampleArgs(schema any) string {
	p := readSchema(schema)
	args := map[string]any{}
	for _, n := range p.Required {
		prop, ok := p.Properties[n]
		if !ok || prop == nil {
			continue
		}
		switch prop.Type {
		case "string":
			args[n] = "…"
		case "number", "integer":
			args[n] = 0
		case "boolean":
			args[n] = false
		case "array":
			args[n] = []any{}
		case "object":
			args[n] = map[string]any{}
		default:
			args[n] = nil
		}
	}
	b, _ := json.Marshal(args)
	return string(b)
}
