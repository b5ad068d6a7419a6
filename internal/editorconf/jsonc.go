package editorconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf/syntax"
)

// StripJSONC turns JSON with comments into plain JSON of the same length
// and lines (see syntax.StripJSONC); an unterminated block comment is an
// *Error at the comment's start.
func StripJSONC(data []byte) ([]byte, error) {
	out, err := syntax.StripJSONC(data)
	return out, fromSyntax(err)
}

// fromSyntax is a syntax error as this package's *Error.
func fromSyntax(err error) error {
	var se *syntax.Error
	if errors.As(err, &se) {
		return &Error{Line: se.Line, Column: se.Column, Message: se.Message}
	}
	return err
}

// decodeJSONC decodes a JSONC document into generic values, numbers kept
// exact, and reports a syntax error with its line and column. The message
// never quotes more than one character of the file.
func decodeJSONC(data []byte) (any, error) {
	plain, err := syntax.StripJSONC(data)
	if errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "comment") {
		return nil, jsonError(data, err) // cut short: where it ends says nothing more
	}
	if err != nil {
		return nil, fromSyntax(err)
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
		line, col := syntax.LineCol(data, end)
		return nil, &Error{Line: line, Column: col, Message: "invalid JSON: more after the end of the document"}
	}
	return doc, nil
}

func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the offending byte itself.
		line, col := syntax.LineCol(data, int(se.Offset)-1)
		return &Error{Line: line, Column: col, Message: "invalid JSON: " + se.Error()}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{Message: "invalid JSON: the file ends too early (is it empty or cut short?)"}
	}
	return &Error{Message: fmt.Sprintf("invalid JSON: %v", err)}
}
