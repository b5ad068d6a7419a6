package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// maxDuplicateProblems bounds how many duplicate keys one error lists.
const maxDuplicateProblems = 20

// duplicateKeys finds every member name that appears twice in one object of
// the JSON document data, which must already be known to be valid JSON.
// Decoders keep one of the two (encoding/json the last, others the first),
// so a duplicate would let what is validated differ from what runs.
//
// One pass over the tokens: each open object keeps a set of its names, so
// the cost is linear in the size of the document, and a JSON location is
// built only for a duplicate found.
func duplicateKeys(data []byte) []Problem {
	type frame struct {
		object bool
		seen   map[string]struct{} // names met so far, for an object
		key    string              // the name of the member being read, for an object
		index  int                 // the index of the next element, for an array
		inKey  bool                // for an object: the next string token is a name
	}
	var stack []*frame
	var problems []Problem
	location := func(last string) string {
		var b bytes.Buffer
		for _, f := range stack[:len(stack)-1] {
			b.WriteByte('/')
			if f.object {
				b.WriteString(escapePointer(f.key))
			} else {
				b.WriteString(strconv.Itoa(f.index))
			}
		}
		b.WriteByte('/')
		b.WriteString(escapePointer(last))
		return b.String()
	}
	// value is called after each complete value: the enclosing container
	// moves on to its next name or element.
	value := func() {
		if len(stack) == 0 {
			return
		}
		if f := stack[len(stack)-1]; f.object {
			f.inKey = true
		} else {
			f.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return problems // io.EOF; a syntax error was reported before this pass
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &frame{object: true, seen: map[string]struct{}{}, inKey: true})
			case '[':
				stack = append(stack, &frame{})
			default: // '}' or ']'
				stack = stack[:len(stack)-1]
				value()
			}
			continue
		case string:
			if f := top(stack); f != nil && f.object && f.inKey {
				f.inKey = false
				if _, dup := f.seen[t]; dup && len(problems) < maxDuplicateProblems {
					problems = append(problems, Problem{Location: location(t),
						Message: fmt.Sprintf("the key %q appears more than once in this object (the last one would win): keep one", t)})
				}
				f.seen[t] = struct{}{}
				f.key = t
				continue
			}
		}
		value()
	}
}

func top[T any](s []*T) *T {
	if len(s) == 0 {
		return nil
	}
	return s[len(s)-1]
}
