// Package syntax reads the two syntaxes of editors' files as far as
// import needs before decoding them, keeping every offset: JSONC (JSON with
// comments and trailing commas: VS Code's, Zed's and Cursor's files) turned
// into plain JSON of the same length and lines, and the nesting of a TOML
// file (Codex's) bounded before a parser whose cost grows with its square
// reads it. Errors carry the line and column of the original file.
//
//	plain, err := syntax.StripJSONC(data) // then encoding/json; offsets still point into data
//	if err := syntax.TOMLNesting(data); err != nil {
//		return err // line 3, column 9: invalid TOML: … nested more than 100 deep
//	}
package syntax

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/tailscale/hujson"
)

// Error is where a file stops being what it should be: a 1-based line and
// column of the original, and what. It never quotes the file.
type Error struct {
	Line, Column int
	Message      string
	Err          error // io.ErrUnexpectedEOF when the file ends too early
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
}

// StripJSONC turns JSON with comments (JSONC: VS Code's and Zed's settings
// files, and what Cursor accepts) into plain JSON: // line comments and
// /* block */ comments become spaces, and a trailing comma before } or ]
// becomes a space. Nothing else changes, and newlines stay where they were,
// so that a JSON error in the result has the line and column of the
// original. A leading UTF-8 byte order mark becomes spaces too.
//
// It is tailscale/hujson's Standardize, whose contract this is, over the
// byte order mark made spaces (hujson refuses one). What is not JSONC is an
// *Error at the line and column hujson stopped at, quoting at most one
// character of the file (a bare word there may be a secret).
func StripJSONC(data []byte) ([]byte, error) {
	in := bytes.Clone(data)
	if bytes.HasPrefix(in, []byte("\xef\xbb\xbf")) {
		in[0], in[1], in[2] = ' ', ' ', ' '
	}
	out, err := hujson.Standardize(in)
	if err != nil {
		return nil, jsoncError(data, err)
	}
	return out, nil
}

// jsoncError is hujson's refusal of data as an *Error of our own words.
// hujson says where as "hujson: line L, column C: …" (columns in bytes, as
// LineCol's), and its messages may quote a whole literal, so only the
// position is kept, and what it found there is said from data itself.
func jsoncError(data []byte, err error) error {
	var line, col int
	if _, serr := fmt.Sscanf(err.Error(), "hujson: line %d, column %d:", &line, &col); serr != nil || line < 1 {
		line, col = 1, 1
	}
	msg := err.Error()
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) && strings.Contains(msg, "parsing comment"):
		msg = "a /* comment is never closed with */"
	case errors.Is(err, io.ErrUnexpectedEOF):
		msg = "the file ends too early (is it empty or cut short?)"
	case strings.Contains(msg, "invalid UTF-8 in comment"):
		msg = "a comment holds invalid UTF-8"
	case strings.Contains(msg, "after top-level value"):
		msg = "more after the end of the document"
	default:
		msg = "unexpected character"
		if r, _ := utf8.DecodeRune(data[min(offset(data, line, col), len(data)):]); r != utf8.RuneError {
			msg = fmt.Sprintf("invalid character %q", r)
		}
	}
	e := &Error{Line: line, Column: col, Message: "invalid JSON: " + msg}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		e.Err = io.ErrUnexpectedEOF
	}
	return e
}

// offset is the byte at a 1-based line and column (LineCol's inverse).
func offset(data []byte, line, col int) int {
	off := 0
	for range line - 1 {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return len(data)
		}
		off += i + 1
	}
	return off + col - 1
}

// MaxTOMLDepth bounds the nesting of arrays and inline tables in a TOML
// file. BurntSushi/toml spends time and memory quadratic in it (10,000
// nested inline tables, a 40 KB file, took 18 s and 4 GB; 50,000 were
// killed at 24 GB), and no editor's file nests more than a few levels.
// Every TOML decode checks it first (TOMLNesting).
const MaxTOMLDepth = 100

// TOMLNesting finds the first place where arrays and inline tables (and
// table headers, [a] and [[a]]) nest deeper than MaxTOMLDepth, skipping
// strings and comments as TOML reads them. It reports it as an *Error at its
// line and column; a file that is not valid TOML may pass, for the parser to
// refuse.
func TOMLNesting(data []byte) error {
	depth, line, lineStart := 0, 1, 0
	// skip moves past the end of a string that ends with delim, from i;
	// escapes says whether a backslash escapes the next byte; multi whether
	// the string may span lines.
	skip := func(i int, delim string, escapes, multi bool) int {
		for i < len(data) {
			switch {
			case escapes && data[i] == '\\':
				i++
			case bytes.HasPrefix(data[i:], []byte(delim)):
				i += len(delim)
				for k := 0; multi && k < 2 && i < len(data) && data[i] == delim[0]; k++ {
					i++ // """a""""": up to two more quotes end the content
				}
				return i
			case data[i] == '\n':
				if !multi {
					return i
				}
				line, lineStart = line+1, i+1
			}
			i++
		}
		return i
	}
	for i := 0; i < len(data); {
		switch c := data[i]; {
		case c == '\n':
			line, lineStart = line+1, i+1
			i++
		case c == '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case bytes.HasPrefix(data[i:], []byte(`"""`)):
			i = skip(i+3, `"""`, true, true)
		case bytes.HasPrefix(data[i:], []byte(`'''`)):
			i = skip(i+3, `'''`, false, true)
		case c == '"':
			i = skip(i+1, `"`, true, false)
		case c == '\'':
			i = skip(i+1, `'`, false, false)
		case c == '[' || c == '{':
			if depth++; depth > MaxTOMLDepth {
				return &Error{Line: line, Column: i - lineStart + 1,
					Message: fmt.Sprintf("invalid TOML: arrays and inline tables nested more than %d deep", MaxTOMLDepth)}
			}
			i++
		case c == ']' || c == '}':
			depth = max(depth-1, 0)
			i++
		default:
			i++
		}
	}
	return nil
}

// LineCol is the 1-based line and column of the byte at off.
func LineCol(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}
