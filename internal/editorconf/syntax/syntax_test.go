package syntax

import (
	"errors"
	"strings"
	"testing"
)

// StripJSONC blanks comments and trailing commas and nothing else: the
// length and every line break stay, so that a decoder's offsets point into
// the original; an unterminated comment is an *Error at its start.
func TestStripJSONC(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{"{\"a\": 1 // one\n}", "{\"a\": 1       \n}"},
		{"{/* a\nb */\"a\": 1}", "{    \n    \"a\": 1}"},
		{`{"u": "http://x/*y*/"}`, `{"u": "http://x/*y*/"}`},     // comments inside strings stay
		{`{"q": "a\"//b", "c": 1}`, `{"q": "a\"//b", "c": 1}`},   // an escaped quote does not end the string
		{`{"q": "a\\", "c": 1,}`, `{"q": "a\\", "c": 1 }`},       // an escaped backslash does
		{`{"a": [1, 2,], "b": 3,}`, `{"a": [1, 2 ], "b": 3 }`},   // trailing commas
		{"{\"a\": 1, // c\n}", "{\"a\": 1      \n}"},             // a trailing comma before a comment
		{"{\"a\": 1, /* c */ }", "{\"a\": 1          }"},         // and before a block comment
		{`{"a": ",}"}`, `{"a": ",}"}`},                           // a comma inside a string is no comma
		{"\xef\xbb\xbf{}", "   {}"},                              // a byte order mark
		{"{\"a\": 1}\r\n// end\r\n", "{\"a\": 1}\r\n      \r\n"}, // CRLF line ends stay
		{`[1, 2 /* , */]`, `[1, 2        ]`},                     // a comma inside a comment is no comma
	} {
		got, err := StripJSONC([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("StripJSONC(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	// What is not JSONC is refused at its line and column, quoting one
	// character at most.
	for _, tc := range []struct {
		in        string
		line, col int
		says      string
	}{
		{`{"a": 1 / 2}`, 1, 9, "invalid character '/'"},
		{"{\n  \"k\": sk-SECRET\n}", 2, 8, "invalid character 's'"},
		{"{} {}", 1, 4, "more after the end of the document"},
		{"{\n\"a\": [1,\n", 3, 1, "the file ends too early"},
		{"", 1, 1, "the file ends too early"},
	} {
		_, err := StripJSONC([]byte(tc.in))
		var e *Error
		if !errors.As(err, &e) || e.Line != tc.line || e.Column != tc.col || !strings.Contains(e.Message, tc.says) || strings.Contains(e.Message, "SECRET") {
			t.Errorf("StripJSONC(%q) = %v (%+v); want line %d, column %d: %s", tc.in, err, e, tc.line, tc.col, tc.says)
		}
	}
	_, err := StripJSONC([]byte("{\n  \"a\": 1 /* never closed\n}"))
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || e.Column != 10 || !strings.Contains(e.Message, "never closed") {
		t.Errorf("an unterminated comment: %v (%+v), want line 2, column 10", err, e)
	}
}
