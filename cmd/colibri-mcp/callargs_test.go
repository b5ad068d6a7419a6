package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A flag's JSON that is not JSON is said at its line and column, and the
// text around the place; JSON says nothing.
func TestJSONProblem(t *testing.T) {
	if p := jsonProblem([]byte(`{"a": [1, 2]}`)); p != "" {
		t.Errorf("valid JSON: %q", p)
	}
	if p := jsonProblem([]byte("{\"message\":\n \"hi\",}")); !strings.Contains(p, "line 2, column 7 (offset 18)") || !strings.Contains(p, `near "{\"message\":\n \"hi\",}"`) {
		t.Errorf("a stray comma: %q", p)
	}
	if p := jsonProblem([]byte(`{"a": `)); p == "" {
		t.Error("cut short: no problem")
	}
}

func ptr(s string) *string { return &s }

// Each source: nothing is {}, --args as given, a file or stdin trimmed;
// both at once and text that is not JSON are refused, naming the source.
func TestRead(t *testing.T) {
	file := filepath.Join(t.TempDir(), "args.json")
	if err := os.WriteFile(file, []byte("  {\"a\": 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		inline, path *string
		stdin        string
		want, err    string
	}{
		{name: "nothing", want: "{}"},
		{name: "inline", inline: ptr(`{"m":"hi"}`), want: `{"m":"hi"}`},
		{name: "file", path: ptr(file), want: `{"a": 1}`},
		{name: "stdin", path: ptr("-"), stdin: "\n{\"b\":2}\n", want: `{"b":2}`},
		{name: "both", inline: ptr("{}"), path: ptr("-"), err: "give --args or --args-file, not both"},
		{name: "no file", path: ptr(file + ".none"), err: "--args-file: open " + file + ".none: no such file"},
		{name: "bad inline", inline: ptr(`{"a":`), err: "--args: not valid JSON: "},
		{name: "bad stdin", path: ptr("-"), stdin: "{,}", err: "--args-file -: not valid JSON: invalid character ',' "},
	} {
		got, err := readCallArgs(tc.inline, tc.path, strings.NewReader(tc.stdin))
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}

// endless is a stdin that never ends (/dev/zero given by mistake).
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.read += int64(len(p))
	return len(p), nil
}

// More than maxCallArgs bytes is refused after reading maxCallArgs+1, never all of it.
func TestReadBounded(t *testing.T) {
	t.Parallel()
	in := &endless{}
	_, err := readCallArgs(nil, ptr("-"), in)
	if err == nil || !strings.Contains(err.Error(), "larger than 67108864 bytes") {
		t.Fatalf("endless stdin: %v", err)
	}
	if in.read > maxCallArgs+64<<10 {
		t.Errorf("read %d bytes for a bound of %d", in.read, maxCallArgs)
	}
	// Exactly maxCallArgs bytes of JSON pass.
	exact := append(bytes.Repeat([]byte(" "), maxCallArgs-2), '{', '}')
	if got, err := readCallArgs(nil, ptr("-"), io.MultiReader(bytes.NewReader(exact))); err != nil || string(got) != "{}" {
		t.Errorf("maxCallArgs bytes: %.20s, %v", got, err)
	}
}
