package schema_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/schema"
)

// Shapes of hostile schemas, each growing with n. The compiler is quadratic
// in the number of subschemas (wide shapes) and cubic in their nesting
// (deep), so each is driven to the largest n within the limits.
var shapes = map[string]func(n int) string{
	"properties": func(n int) string {
		return `{"type":"object","properties":{` + join(n, func(i int) string { return fmt.Sprintf(`"p%d":{"type":"string"}`, i) }) + `}}`
	},
	"anyOf": func(n int) string {
		return `{"anyOf":[` + join(n, func(i int) string { return fmt.Sprintf(`{"const":%d}`, i) }) + `]}`
	},
	"prefixItems": func(n int) string {
		return `{"type":"array","prefixItems":[` + join(n, func(int) string { return `{"type":"integer"}` }) + `]}`
	},
	"$defs and $refs": func(n int) string {
		return `{"$defs":{"d0":{"type":"string"},` + join(n, func(i int) string { return fmt.Sprintf(`"d%d":{"$ref":"#/$defs/d%d"}`, i+1, i) }) +
			`},"properties":{` + join(n, func(i int) string { return fmt.Sprintf(`"p%d":{"$ref":"#/$defs/d%d"}`, i, i+1) }) + `}}`
	},
	"deep": func(n int) string {
		return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{}` + strings.Repeat(`}}`, n)
	},
	"deep, long names": func(n int) string {
		k := strings.Repeat("k", 2000)
		return strings.Repeat(`{"properties":{"`+k+`":`, n) + `{}` + strings.Repeat(`}}`, n)
	},
	"enum": func(n int) string {
		return `{"enum":[` + join(n, func(i int) string { return fmt.Sprintf(`"value number %d"`, i) }) + `]}`
	},
	"patterns": func(n int) string {
		return `{"properties":{` + join(n, func(i int) string { return fmt.Sprintf(`"p%d":{"pattern":"^(a|b%d)+[0-9]{1,3}$"}`, i, i) }) + `}}`
	},
	"patternProperties": func(n int) string {
		return `{"patternProperties":{` + join(n, func(i int) string { return fmt.Sprintf(`"^x%d(a|b)*$":{}`, i) }) + `}}`
	},
	"one pattern": func(n int) string {
		return `{"pattern":"` + strings.Repeat("(a|b)", n) + `"}`
	},
}

func join(n int, f func(int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = f(i)
	}
	return strings.Join(parts, ",")
}

// largest is the largest n whose shape is within the default limits.
func largest(shape func(int) string) (int, string) {
	hi := 1
	for schema.DefaultLimits.Check([]byte(shape(hi))) == nil {
		hi *= 2
	}
	lo := hi / 2
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if schema.DefaultLimits.Check([]byte(shape(mid))) == nil {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, shape(lo)
}

// The worst schema of each shape that the limits let through compiles
// quickly. Measured here without -race (2 shared cores): 1–35 ms each;
// the bound asserted leaves room for -race and a loaded machine.
func TestWorstCaseWithinLimits(t *testing.T) {
	for name, shape := range shapes {
		n, raw := largest(shape)
		if n == 0 {
			t.Errorf("%s: not even one fits the limits", name)
			continue
		}
		// CPU time, not the clock: a loaded machine (make test runs four
		// packages at once) stretches the clock, not the work.
		start := cpuTime(t)
		_, err := schema.Compile(context.Background(), []byte(raw))
		d := cpuTime(t) - start
		t.Logf("%-18s n=%5d %6d bytes: compiled in %v of CPU (err %v)", name, n, len(raw), d, err)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if d > time.Second {
			t.Errorf("%s at the limits took %v to compile", name, d)
		}
	}
}

// A 1.3 MB schema of any shape (the one that once took 280 s of CPU) is
// refused before compiling, at once.
func TestHugeSchemaRefusedAtOnce(t *testing.T) {
	for name, shape := range shapes {
		n := 1
		for len(shape(n)) < 1300<<10 {
			n *= 2
		}
		raw := []byte(shape(n))
		start := cpuTime(t)
		_, err := schema.Compile(context.Background(), raw)
		if !errors.Is(err, schema.ErrLimit) {
			t.Errorf("%s (%d bytes): err = %v, want ErrLimit", name, len(raw), err)
		}
		if d := cpuTime(t) - start; d > time.Second { // compiling it took minutes; refusing it takes a millisecond or two
			t.Errorf("%s: refused after %v", name, d)
		}
	}
}

func TestLimits(t *testing.T) {
	l := schema.Limits{Bytes: 1000, Nodes: 10, Depth: 3, PatternBytes: 10}
	cases := []struct {
		raw  string
		want string // "" for within the limits
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, ""},
		{`{"x":"` + strings.Repeat("a", 1000) + `"}`, "1008 bytes, limit 1000"},
		{`{"anyOf":[{},{},{},{},{},{},{},{},{},{}]}`, "more than 10 objects and arrays"},
		{`{"a":{"b":{"c":{}}}}`, "nested more than 3 deep"},
		{`[[[1]]]`, ""},
		{`{"pattern":"01234567890"}`, "more than 10 bytes of regular expressions"},
		{`{"patternProperties":{"^abc$":{},"^abcdef$":{}}}`, "more than 10 bytes of regular expressions"},
		{`{"pattern":"0123456789","properties":{"pattern":{"description":"a property named pattern is no regexp"}}}`, ""},
		{`{"description":"pattern","enum":["0123456789abc"]}`, ""},
	}
	for _, tc := range cases {
		err := l.Check([]byte(tc.raw))
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, schema.ErrLimit) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Check(%.60s) = %v, want %q", tc.raw, err, tc.want)
		}
	}
}

// Compile returns when its context ends, however long the compiler would
// still take (here a schema that the default limits would refuse, compiled
// with the limits lifted: seconds of work).
func TestCompileReturnsAtTheDeadline(t *testing.T) {
	unbounded := schema.Limits{Bytes: 1 << 30, Nodes: 1 << 30, Depth: 1 << 30, PatternBytes: 1 << 30}
	raw := []byte(shapes["deep"](250))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := unbounded.Compile(ctx, raw)
	d := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline", err)
	}
	if d > 300*time.Millisecond {
		t.Errorf("returned after %v, with a 50 ms deadline", d)
	}
}

func TestExternalRefRefused(t *testing.T) {
	for _, ref := range []string{"https://example.com/schema.json", "file:///etc/passwd", "other.json#/x"} {
		_, err := schema.Compile(context.Background(), []byte(`{"properties":{"a":{"$ref":"`+ref+`"}}}`))
		if !errors.Is(err, schema.ErrExternalRef) {
			t.Errorf("$ref %s: err = %v, want ErrExternalRef", ref, err)
		}
	}
	if _, err := schema.Compile(context.Background(), []byte(`{"$defs":{"x":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/x"}}}`)); err != nil {
		t.Errorf("an internal $ref: %v", err)
	}
}

func TestProblems(t *testing.T) {
	sch, err := schema.Compile(context.Background(), []byte(`{"type":"object","properties":{"n":{"type":"integer"},"a/b":{"type":"array","items":{"type":"string"}}},"required":["n"],"propertyNames":{"maxLength":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = sch.Validate(map[string]any{"a/b": []any{"x", 1}, "long": true})
	var got []string
	for _, p := range schema.Problems(err) {
		got = append(got, p.String())
	}
	want := []string{"/: missing property 'n'", "/a~1b/1: got number, want string", `/long: the name "long" is not allowed: maxLength: got 4, want 3`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// CheckValue agrees with Check on decoded schemas, and stops early on huge
// ones: walking a 1.3 MB schema costs no more than one at the limits.
func TestCheckValue(t *testing.T) {
	l := schema.Limits{Bytes: 1000, Nodes: 10, Depth: 3, PatternBytes: 10}
	cases := map[string]string{
		`{"type":"object","properties":{"a":{"type":"string"}}}`:    "",
		`{"x":"` + strings.Repeat("a", 1000) + `"}`:                 "more than 1000 bytes",
		`{"anyOf":[{},{},{},{},{},{},{},{},{},{}]}`:                 "more than 10 objects and arrays",
		`{"a":{"b":{"c":{}}}}`:                                      "nested more than 3 deep",
		`{"pattern":"01234567890"}`:                                 "more than 10 bytes of regular expressions",
		`{"patternProperties":{"^abc$":{},"^abcdef$":{}}}`:          "more than 10 bytes of regular expressions",
		`{"properties":{"pattern":{"description":"not a regexp"}}}`: "",
	}
	for raw, want := range cases {
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			t.Fatal(err)
		}
		err := l.CheckValue(v)
		if want == "" && err != nil || want != "" && (!errors.Is(err, schema.ErrLimit) || !strings.Contains(err.Error(), want)) {
			t.Errorf("CheckValue(%.60s) = %v, want %q", raw, err, want)
		}
	}
	for name, shape := range shapes {
		n := 100_000
		if strings.HasPrefix(name, "deep") {
			n = 4000 // encoding/json refuses more than 10,000 levels
		}
		var v any
		if err := json.Unmarshal([]byte(shape(n)), &v); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err := schema.DefaultLimits.CheckValue(v)
		if d := time.Since(start); !errors.Is(err, schema.ErrLimit) || d > 500*time.Millisecond { // it stops at the first limit crossed: room for a loaded machine, none for a blow-up
			t.Errorf("%s, n=%d: %v after %v, want ErrLimit at once", name, n, err, d)
		}
		_, raw := largest(shape)
		json.Unmarshal([]byte(raw), &v)
		if err := schema.DefaultLimits.CheckValue(v); err != nil {
			t.Errorf("%s at the limits of Check: CheckValue says %v", name, err)
		}
	}
}

// cpuTime is this process's user+system CPU time so far (no test of this
// package runs in parallel with another).
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
