package editorconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

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
					line, col := lineCol(data, i)
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

// decodeJSONC decodes a JSONC document into generic values, numbers kept
// exact, and reports a syntax error with its line and column. The message
// never quotes more than one character of the file.
func decodeJSONC(data []byte) (any, error) {
	plain, err := StripJSONC(data)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(plain))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, jsonError(data, err)
	}
	// One document, nothing after it but space.
	end := int(dec.InputOffset())
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		for end < len(plain) && strings.IndexByte(" \t\r\n", plain[end]) >= 0 {
			end++
		}
		line, col := lineCol(data, end)
		return nil, &Error{Line: line, Column: col, Message: "invalid JSON: more after the end of the document"}
	}
	return doc, nil
}

func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the offending byte itself.
		line, col := lineCol(data, int(se.Offset)-1)
		return &Error{Line: line, Column: col, Message: "invalid JSON: " + se.Error()}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{Message: "invalid JSON: the file ends too early (is it empty or cut short?)"}
	}
	return &Error{Message: fmt.Sprintf("invalid JSON: %v", err)}
}

// lineCol is the 1-based line and column of the byte at off.
func lineCol(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}
