// Package argcheck checks a call's arguments against the hosted tool's
// inputSchema, compiling each distinct schema once (internal/schema's
// bounded compile) and sharing it across goroutines. A schema that cannot
// be checked is logged once and the call goes ahead: the hosted server
// remains the judge of its own arguments.
//
//	c := argcheck.New(logger, bulkTable)
//	if err := c.Check(ctx, "git", tool, args); err != nil { … } // kind invalid_arguments
package argcheck

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/schema"
)

// Cache compiles hosted tools' input schemas once per distinct content
// (compiling costs ~100-250 µs for a usual schema, validating ~2 µs) and
// shares the compiled schema across goroutines. A Compiler is never shared.
//
// A compile runs once per content, in the background, bounded by
// internal/schema's limits and by compileBudget; a caller waits for it only
// until its own context ends, then goes ahead unchecked.
type Cache struct {
	log    *slog.Logger
	bulk   *bulk.Table
	m      sync.Map // [sha256.Size]byte -> *compiledSchema
	n      atomic.Int64
	byTool sync.Map // weak.Pointer[mcp.Tool] -> *compiledSchema, dropped when the tool is collected
}

type compiledSchema struct {
	done     chan struct{} // closed when schema and err are set
	schema   *jsonschema.Schema
	err      error
	reported atomic.Bool // an uncheckable schema is logged once
	// readsStrings: the schema has a keyword that reads what a string says
	// (readsStrings), so its check needs the real value of a string lifted
	// into the bulk table, not the reference standing for it.
	readsStrings bool
}

// maxSchemaCacheEntries bounds the cache: past it, schemas are compiled for
// each use instead of kept (a hostile server could send endless new ones).
const maxSchemaCacheEntries = 4096

// compileBudget bounds one compile on a loaded machine; a compile that runs
// out of it is forgotten (never cached), and tried again on the next call.
const compileBudget = 2 * time.Second

// get returns the compiled schema for raw JSON, or why it cannot be used;
// the entry is nil when ctx ended first.
func (c *Cache) get(ctx context.Context, raw []byte, reads bool) (*compiledSchema, error) {
	key := sha256.Sum256(raw)
	v, ok := c.m.Load(key)
	if !ok {
		if c.n.Load() >= maxSchemaCacheEntries {
			sch, err := schema.Compile(ctx, raw)
			return &compiledSchema{schema: sch, err: err, readsStrings: reads}, err
		}
		var loaded bool
		v, loaded = c.m.LoadOrStore(key, &compiledSchema{done: make(chan struct{}), readsStrings: reads})
		if !loaded {
			c.n.Add(1)
			cs := v.(*compiledSchema)
			go func() {
				bctx, cancel := context.WithTimeout(context.Background(), compileBudget)
				defer cancel()
				cs.schema, cs.err = schema.Compile(bctx, raw)
				if errors.Is(cs.err, context.DeadlineExceeded) {
					c.m.Delete(key)
					c.n.Add(-1)
				}
				close(cs.done)
			}()
		}
	}
	cs := v.(*compiledSchema)
	if cs.done == nil {
		return cs, cs.err
	}
	select {
	case <-cs.done:
		return cs, cs.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// forTool returns the compiled input schema of a listed tool. The tool
// object itself is the first key, so a call on a cached list does not
// re-encode the schema; held weakly, so the entry goes when its list does.
// The schema's content is the second key, so equal schemas compile once.
func (c *Cache) forTool(ctx context.Context, t *mcp.Tool) (*compiledSchema, error) {
	key := weak.Make(t)
	if v, ok := c.byTool.Load(key); ok {
		cs := v.(*compiledSchema)
		return cs, cs.err
	}
	// A huge schema is refused by a walk that stops at the limits, before
	// it costs an encoding.
	cs, err := c.compile(ctx, t.InputSchema)
	if cs == nil || errors.Is(err, context.DeadlineExceeded) {
		return cs, err // not final: the next call waits again
	}
	if _, loaded := c.byTool.LoadOrStore(key, cs); !loaded {
		runtime.AddCleanup(t, func(k weak.Pointer[mcp.Tool]) { c.byTool.Delete(k) }, key)
	}
	return cs, err
}

// compile checks v against the limits, then compiles it (through the
// cache); the entry is nil when ctx ended first.
func (c *Cache) compile(ctx context.Context, v any) (*compiledSchema, error) {
	// A huge schema is refused by a walk that stops at the limits, before
	// it costs an encoding.
	if err := schema.DefaultLimits.CheckValue(v); err != nil {
		return &compiledSchema{err: err}, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return &compiledSchema{err: err}, err
	}
	return c.get(ctx, raw, readsStrings(v))
}

// stringKeywords are the JSON Schema keywords whose outcome can depend on
// what a string says rather than on its being a string: its length, its
// pattern or format, its content, and the comparisons of values (enum,
// const, uniqueItems).
var stringKeywords = map[string]bool{
	"minLength": true, "maxLength": true, "pattern": true, "format": true,
	"contentEncoding": true, "contentMediaType": true, "contentSchema": true,
	"enum": true, "const": true, "uniqueItems": true,
}

// refKeywords are the keywords that apply a schema named by a URI.
var refKeywords = map[string]bool{"$ref": true, "$dynamicRef": true, "$recursiveRef": true}

// readsStrings reports whether a schema (decoded JSON, already within
// internal/schema's limits) has one of stringKeywords as a key anywhere, or
// refers to another document. Only then can its check tell a reference to
// a string lifted into the bulk table (internal/bulk) from the string it
// stands for: every other keyword sees a string. A key of that name that is
// not a keyword (a property called "pattern") counts too, which costs only
// the resolving; so does a schema that is not plain decoded JSON.
//
// The other document can only be a JSON Schema meta-schema (internal/schema
// follows no other external reference, but the compiler holds the drafts'
// meta-schemas), and those read strings: "pattern" on "$id" and "$anchor",
// formats in draft-07 and before. A reference that is not a fragment of
// this document ("#…") counts, whatever it names: the walk cannot see what
// it applies.
func readsStrings(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if stringKeywords[k] || readsStrings(e) {
				return true
			}
			if s, ok := e.(string); ok && refKeywords[k] && !strings.HasPrefix(s, "#") {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if readsStrings(e) {
				return true
			}
		}
	case string, float64, json.Number, bool, nil:
	default:
		return true
	}
	return false
}

// New returns an empty Cache. log is told of schemas that cannot be
// checked; strings lifted into table (internal/bulk) are resolved for a
// schema that reads what strings say.
func New(log *slog.Logger, table *bulk.Table) *Cache { return &Cache{log: log, bulk: table} }

// Check checks args (decoded JSON: session.Checked) against a hosted tool's
// input schema. A schema that cannot be checked (too large, an external $ref, not
// compiled before ctx ended, or not a schema) is logged once and the call
// goes ahead: the hosted server remains the judge of its own arguments.
func (c *Cache) Check(ctx context.Context, server string, tool *mcp.Tool, args any) error {
	if tool.InputSchema == nil {
		return nil
	}
	cs, err := c.forTool(ctx, tool)
	if err != nil {
		if cs == nil || cs.reported.CompareAndSwap(false, true) {
			c.log.WarnContext(ctx, "hosted tool's input schema cannot be checked; arguments not checked",
				"server", server, "tool", tool.Name, "err", err)
		}
		return nil
	}
	if args == nil {
		args = map[string]any{}
	}
	if cs.readsStrings {
		// The real values of lifted strings: copies, for the check only.
		args = c.bulk.Resolve(args)
	} else {
		// A string of any content passes where a lifted one stands: its
		// reference does (bulk.Lifted is no JSON type of the schema's).
		args = bulk.Untyped(args)
	}
	if err := cs.schema.Validate(args); err != nil {
		var parts []string
		for _, p := range schema.Problems(err) {
			parts = append(parts, "arguments"+strings.TrimSuffix(p.Location, "/")+": "+p.Message)
		}
		return &failure.Error{Kind: failure.KindInvalidArguments, Server: server, Tool: tool.Name, Phase: failure.PhaseCall,
			Err: errors.New(strings.Join(parts, "; ")), Hint: "see the tool's inputSchema in colibri_external_mcp_list_tools"}
	}
	return nil
}
