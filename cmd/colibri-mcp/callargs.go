// readCallArgs reads the arguments of one tool call from the command
// line: inline JSON (--args), or a file or stdin (--args-file PATH, - for
// stdin) read up to maxCallArgs bytes, and says where text stops being JSON, at
// its line and column. Nothing given is {}.
//
//	args, err := readCallArgs(nil, &path, os.Stdin) // --args-file PATH
//	if err != nil { // "--args-file PATH: not valid JSON: … at line 2, column 7 …"
//		return err
//	}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxCallArgs bounds what --args-file reads: arguments are JSON for one tool call,
// and a mistaken path (/dev/zero) must not exhaust memory.
const maxCallArgs = 64 << 20

// readCallArgs returns the arguments: inline (--args) when it is given, else what
// the file (--args-file; "-" reads stdin) holds, trimmed, else {}. nil is
// a flag not given. Giving both is refused.
func readCallArgs(inline, file *string, stdin io.Reader) (json.RawMessage, error) {
	args, source := json.RawMessage("{}"), "--args"
	switch {
	case inline != nil && file != nil:
		return nil, errors.New("give --args or --args-file, not both")
	case inline != nil:
		args = json.RawMessage(*inline)
	case file != nil:
		path := *file
		source = "--args-file " + path
		r := stdin
		if path != "-" {
			f, err := os.Open(path)
			if err != nil {
				return nil, fmt.Errorf("--args-file: %v", err)
			}
			defer f.Close()
			r = f
		}
		b, err := io.ReadAll(io.LimitReader(r, maxCallArgs+1))
		if err != nil {
			return nil, fmt.Errorf("--args-file %s: %v", path, err)
		}
		if len(b) > maxCallArgs {
			return nil, fmt.Errorf("--args-file %s: larger than %d bytes", path, maxCallArgs)
		}
		args = json.RawMessage(bytes.TrimSpace(b))
	}
	if problem := jsonProblem(args); problem != "" {
		return nil, fmt.Errorf("%s: not valid JSON: %s", source, problem)
	}
	return args, nil
}

// jsonProblem says where data stops being JSON ("" when it is JSON): the
// line, column and byte, and the text around it.
func jsonProblem(data []byte) string {
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		return ""
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err.Error() // the end came first
	}
	off := min(max(int(se.Offset)-1, 0), len(data)) // the character it stopped at
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	from := max(0, off-20)
	return fmt.Sprintf("%s at line %d, column %d (offset %d), near %q", se, line, col, off, data[from:min(len(data), off+10)])
}
