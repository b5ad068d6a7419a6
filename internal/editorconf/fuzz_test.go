package editorconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzStripJSONC: for any input, StripJSONC keeps the length and every line
// break where it was (so that errors point into the original), leaves valid
// JSON exactly as it was, and fails only with an *Error; and Parse, in every
// format, returns entries or an *Error, never a panic.
func FuzzStripJSONC(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "env": {"API_KEY": "v"}}}}`))
	f.Add([]byte("// c\n{\"context_servers\": {\"a\": {\"command\": {\"path\": \"/x\"}},}, /* b */}"))
	f.Add([]byte(`{"servers": {"a": {"type": "http", "url": "https://x", "headers": {"Authorization": "Bearer ${input:t}"}}}}`))
	f.Add([]byte(`{"q": "a\"//b\\", "c": [1, 2,],}`))
	f.Add([]byte("{/* never closed"))
	f.Add([]byte("\xef\xbb\xbf{\"a\": \"$${env:X}$\"}\r\n"))
	f.Add([]byte("[mcp_servers.a]\ncommand = \"x\"\nenv = { K = \"v\" }\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := StripJSONC(in)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Line < 1 {
				t.Fatalf("err = %#v, want an *Error with a line", err)
			}
		} else {
			if len(out) != len(in) {
				t.Fatalf("length %d, want %d", len(out), len(in))
			}
			for i := range in {
				if (in[i] == '\n') != (out[i] == '\n') {
					t.Fatalf("a line break moved at byte %d", i)
				}
			}
			if json.Valid(in) && !bytes.HasPrefix(in, []byte("\xef\xbb\xbf")) && !bytes.Equal(in, out) {
				t.Fatalf("valid JSON changed: %q → %q", in, out)
			}
		}
		for _, format := range Formats {
			res, err := Parse(in, format, Options{Home: "/h", Workspace: "/w"})
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("%s: err = %#v, want an *Error", format, err)
				}
				continue
			}
			for _, e := range res.Entries {
				if !validName(e.Name) || (e.Command == "") == (e.URL == "") {
					t.Fatalf("%s: entry %+v", format, e)
				}
			}
			Document(res.Entries)
		}
	})
}
