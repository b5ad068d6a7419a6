package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// schemaCache compiles hosted tools' input schemas once per distinct content
// (compiling costs ~100-250 µs, validating ~2 µs) and shares the compiled
// schema across goroutines. A Compiler is never shared.
type schemaCache struct {
	m      sync.Map // [sha256.Size]byte -> *compiledSchema
	byTool sync.Map // weak.Pointer[mcp.Tool] -> *compiledSchema, dropped when the tool is collected
}

type compiledSchema struct {
	once   sync.Once
	schema *jsonschema.Schema
	err    error
}

// maxSchemaCacheEntries bounds the cache: past it, schemas are compiled for
// each use instead of kept (a hostile server could send endless new ones).
const maxSchemaCacheEntries = 4096

// get returns the compiled schema for raw JSON.
func (c *schemaCache) get(raw []byte) (*jsonschema.Schema, error) {
	key := sha256.Sum256(raw)
	if v, ok := c.m.Load(key); ok {
		cs := v.(*compiledSchema)
		cs.once.Do(func() { cs.schema, cs.err = compile(raw) })
		return cs.schema, cs.err
	}
	n := 0
	c.m.Range(func(any, any) bool { n++; return n < maxSchemaCacheEntries })
	if n >= maxSchemaCacheEntries {
		return compile(raw)
	}
	v, _ := c.m.LoadOrStore(key, &compiledSchema{})
	cs := v.(*compiledSchema)
	cs.once.Do(func() { cs.schema, cs.err = compile(raw) })
	return cs.schema, cs.err
}

// noLoader refuses every external reference: a hosted schema must not make
// colibri read local files or reach the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema references are not followed (%s)", url)
}

func compile(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const url = "colibri:///hosted-tool-input.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// forTool returns the compiled input schema of a listed tool. The tool
// object itself is the first key, so a call on a cached list does not
// re-encode the schema; held weakly, so the entry goes when its list does.
// The schema's content is the second key, so equal schemas compile once.
func (c *schemaCache) forTool(t *mcp.Tool) (*jsonschema.Schema, error) {
	key := weak.Make(t)
	if v, ok := c.byTool.Load(key); ok {
		cs := v.(*compiledSchema)
		return cs.schema, cs.err
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, err
	}
	sch, err := c.get(raw)
	if _, loaded := c.byTool.LoadOrStore(key, &compiledSchema{schema: sch, err: err}); !loaded {
		runtime.AddCleanup(t, func(k weak.Pointer[mcp.Tool]) { c.byTool.Delete(k) }, key)
	}
	return sch, err
}

// validateArgs checks args (decoded JSON) against a hosted tool's input
// schema. A schema that does not compile is logged and the call goes ahead:
// the hosted server remains the judge of its own arguments.
func (h *Host) validateArgs(server string, tool *mcp.Tool, args any) error {
	if tool.InputSchema == nil {
		return nil
	}
	sch, err := h.schemas.forTool(tool)
	if err != nil {
		h.log.Warn("hosted tool's input schema does not compile; arguments not checked",
			"server", server, "tool", tool.Name, "err", err)
		return nil
	}
	if args == nil {
		args = map[string]any{}
	}
	if err := sch.Validate(args); err != nil {
		var ve *jsonschema.ValidationError
		msg := err.Error()
		if errors.As(err, &ve) {
			var parts []string
			for _, p := range registry.SchemaProblems(ve) {
				parts = append(parts, "arguments"+strings.TrimSuffix(p.Location, "/")+": "+p.Message)
			}
			msg = strings.Join(parts, "; ")
		}
		return &Error{Kind: KindInvalidArguments, Server: server, Tool: tool.Name, Phase: PhaseCall,
			Err: errors.New(msg), Hint: "see the tool's inputSchema in colibri_external_mcp_list_tools"}
	}
	return nil
}
