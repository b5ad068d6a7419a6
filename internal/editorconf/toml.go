package editorconf

import (
	"bytes"
	"fmt"
)

// maxTOMLDepth bounds the nesting of arrays and inline tables in a TOML
// file. BurntSushi/toml spends time and memory quadratic in it (10,000
// nested inline tables, a 40 KB file, took 18 s and 4 GB; 50,000 were
// killed at 24 GB), and no editor's file nests more than a few levels.
// Every TOML decode checks it first (tomlNesting).
const maxTOMLDepth = 100

// tomlNesting finds the first place where arrays and inline tables (and
// table headers, [a] and [[a]]) nest deeper than maxTOMLDepth, skipping
// strings and comments as TOML reads them. It reports it as an *Error at its
// line and column; a file that is not valid TOML may pass, for the parser to
// refuse.
func tomlNesting(data []byte) error {
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
			if depth++; depth > maxTOMLDepth {
				return &Error{Line: line, Column: i - lineStart + 1,
					Message: fmt.Sprintf("invalid TOML: arrays and inline tables nested more than %d deep", maxTOMLDepth)}
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
