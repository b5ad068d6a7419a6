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
	"fmt"
)

// Error is where a file stops being what it should be: a 1-based line and
// column of the original, and what. It never quotes the file.
type Error struct {
	Line, Column int
	Message      string
}

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
// Inside strings nothing is touched ("http://x" keeps its //). An
// unterminated block comment is an *Error at the comment's start; anything
// else that is not JSON is left for the JSON decoder to report.
func StripJSONC(data []byte) ([]byte, error) {
	out := bytes.Clone(data)
	i := 0
	if bytes.HasPrefix(out, []byte("\xef\xbb\xbf")) {
		out[0], out[1], out[2] = ' ', ' ', ' '
		i = 3
	}
	blank := func(from, to int) {
		for k := from; k < to; k++ {
			if out[k] != '\n' && out[k] != '\r' {
				out[k] = ' '
			}
		}
	}
	comma := -1 // a comma outside strings, not yet followed by a value
	for i < len(out) {
		switch c := out[i]; c {
		case '"':
			comma = -1
			i++
			for i < len(out) && out[i] != '"' {
				if out[i] == '\\' {
					i++
				}
				if i < len(out) && out[i] == '\n' {
					break // JSON strings hold no newline: let the decoder say so
				}
				i++
			}
			i++
		case '/':
			switch {
			case i+1 < len(out) && out[i+1] == '/':
				end := bytes.IndexByte(out[i:], '\n')
				if end < 0 {
					end = len(out) - i
				}
				blank(i, i+end)
				i += end
			case i+1 < len(out) && out[i+1] == '*':
				end := bytes.Index(out[i+2:], []byte("*/"))
				if end < 0 {
					line, col := LineCol(data, i)
					return nil, &Error{Line: line, Column: col, Message: "invalid JSON: a /* comment is never closed with */"}
				}
				blank(i, i+2+end+2)
				i += 2 + end + 2
			default:
				comma = -1
				i++
			}
		case ',':
			comma = i
			i++
		case '}', ']':
			if comma >= 0 {
				out[comma] = ' '
			}
			comma = -1
			i++
		case ' ', '\t', '\n', '\r':
			i++
		default:
			comma = -1
			i++
		}
	}
	return out, nil
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
