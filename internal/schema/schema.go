// Package schema compiles the JSON Schemas that hosted MCP servers send as
// their tools' inputSchema, so that colibri can check a call's arguments
// before sending it, and turns a failed check into located problems.
//
// A hosted schema is untrusted input, and the compiler's cost grows faster
// than its size (quadratic in the number of subschemas, cubic in their
// nesting: a 1.3 MB schema once took 280 s of CPU). So Compile bounds the
// schema before compiling it (bytes, objects and arrays, nesting, regular
// expressions), follows no external $ref (no file is read, no network
// reached), and returns when its context ends even if the compiler has not.
//
//	sch, err := schema.Compile(ctx, raw)
//	if err != nil {
//		// too large, external $ref, timed out, or not a schema: check nothing
//	} else if err := sch.Validate(args); err != nil {
//		for _, p := range schema.Problems(err) {
//			fmt.Println(p.Location, p.Message) // "/count: got string, want integer"
//		}
//	}
package schema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Limits bound a schema before it is compiled. Past any of them the schema
// is not compiled at all.
type Limits struct {
	Bytes        int // the raw JSON
	Nodes        int // objects and arrays, at any depth
	Depth        int // nesting of objects and arrays
	PatternBytes int // regular expressions: "pattern" values and "patternProperties" names, all together
}

// DefaultLimits are chosen so that the slowest schema within all of them
// compiles in well under 100 ms on a small machine (measured in
// schema_test.go: TestWorstCaseWithinLimits), while real tools' schemas (a
// few kilobytes, tens of subschemas) are far inside them.
var DefaultLimits = Limits{Bytes: 64 << 10, Nodes: 1000, Depth: 64, PatternBytes: 8 << 10}

// ErrLimit is a schema beyond Limits.
var ErrLimit = errors.New("schema exceeds colibri's limits for checking")

// ErrExternalRef is a schema that refers to another document.
var ErrExternalRef = errors.New("external schema references are not followed")

// Compile compiles raw within DefaultLimits.
func Compile(ctx context.Context, raw []byte) (*jsonschema.Schema, error) {
	return DefaultLimits.Compile(ctx, raw)
}

// Compile checks raw against l, then compiles it in a goroutine of its own
// and waits for it until ctx ends; the limits bound what that goroutine can
// still spend after Compile has returned.
func (l Limits) Compile(ctx context.Context, raw []byte) (*jsonschema.Schema, error) {
	if err := l.Check(raw); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("compiling the schema: %w", context.Cause(ctx))
	}
	type result struct {
		sch *jsonschema.Schema
		err error
	}
	done := make(chan result, 1)
	go func() {
		sch, err := compile(raw)
		done <- result{sch, err}
	}()
	select {
	case r := <-done:
		return r.sch, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("compiling the schema: %w", context.Cause(ctx))
	}
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
	sch, err := c.Compile(url)
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) && errors.Is(le.Err, ErrExternalRef) {
		return nil, fmt.Errorf("%w (%s)", ErrExternalRef, le.URL)
	}
	return sch, err
}

// noLoader refuses every external reference: a hosted schema must not make
// colibri read local files or reach the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%w (%s)", ErrExternalRef, url)
}

// CheckValue is Check for a schema already decoded (map[string]any, []any,
// strings, numbers, booleans, nil), such as a tool's InputSchema from the
// go-sdk. It walks the value only as far as the limits, so a huge schema
// costs no more than a schema at the limits; its size in bytes is the
// length of its strings and names plus a few bytes for each value, an
// estimate of its encoded size from below.
func (l Limits) CheckValue(v any) error {
	w := walker{l: l}
	return w.walk(v, 1, false)
}

type walker struct {
	l                      Limits
	bytes, nodes, patterns int
}

func (w *walker) walk(v any, depth int, isPattern bool) error {
	w.bytes += 2
	switch v := v.(type) {
	case map[string]any:
		if err := w.node(depth); err != nil {
			return err
		}
		for k, e := range v {
			w.bytes += len(k) + 4
			if isPattern {
				w.patterns += len(k)
			}
			if s, ok := e.(string); ok && k == "pattern" {
				w.patterns += len(s)
			}
			if err := w.check(); err != nil {
				return err
			}
			if err := w.walk(e, depth+1, k == "patternProperties"); err != nil {
				return err
			}
		}
	case []any:
		if err := w.node(depth); err != nil {
			return err
		}
		for _, e := range v {
			if err := w.walk(e, depth+1, false); err != nil {
				return err
			}
		}
	case string:
		w.bytes += len(v)
	default:
		w.bytes += 8
	}
	return w.check()
}

func (w *walker) node(depth int) error {
	if w.nodes++; w.nodes > w.l.Nodes {
		return fmt.Errorf("%w: more than %d objects and arrays", ErrLimit, w.l.Nodes)
	}
	if depth > w.l.Depth {
		return fmt.Errorf("%w: nested more than %d deep", ErrLimit, w.l.Depth)
	}
	return nil
}

func (w *walker) check() error {
	switch {
	case w.bytes > w.l.Bytes:
		return fmt.Errorf("%w: more than %d bytes", ErrLimit, w.l.Bytes)
	case w.patterns > w.l.PatternBytes:
		return fmt.Errorf("%w: more than %d bytes of regular expressions", ErrLimit, w.l.PatternBytes)
	}
	return nil
}

// Check reports whether raw is within l, in one pass over its tokens that
// stops at the first limit crossed. It does not check that raw is a schema.
func (l Limits) Check(raw []byte) error {
	if len(raw) > l.Bytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrLimit, len(raw), l.Bytes)
	}
	type frame struct {
		object   bool
		key      string // the current member's name, in an object
		inKey    bool   // in an object: the next string is a name
		patterns bool   // this object is the value of "patternProperties"
	}
	var stack []frame
	nodes, patterns := 0, 0
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not JSON: %w", err)
		}
		var parent *frame
		if len(stack) > 0 {
			parent = &stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '}' || t == ']' {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].inKey = true
				}
				continue
			}
			if nodes++; nodes > l.Nodes {
				return fmt.Errorf("%w: more than %d objects and arrays", ErrLimit, l.Nodes)
			}
			if len(stack)+1 > l.Depth {
				return fmt.Errorf("%w: nested more than %d deep", ErrLimit, l.Depth)
			}
			f := frame{object: t == '{', inKey: t == '{'}
			f.patterns = f.object && parent != nil && parent.object && parent.key == "patternProperties"
			stack = append(stack, f)
			continue
		case string:
			isKey := parent != nil && parent.object && parent.inKey
			switch {
			case isKey && parent.patterns:
				patterns += len(t)
			case !isKey && parent != nil && parent.object && parent.key == "pattern":
				patterns += len(t)
			}
			if patterns > l.PatternBytes {
				return fmt.Errorf("%w: more than %d bytes of regular expressions", ErrLimit, l.PatternBytes)
			}
			if isKey {
				parent.inKey = false
				parent.key = t
				continue
			}
		}
		if parent != nil && parent.object {
			parent.inKey = true
		}
	}
}
