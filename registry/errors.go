package registry

import (
	"strings"
)

// Error is an unreadable or invalid registry: the file, and each problem with
// its JSON location.
type Error struct {
	File     string
	Problems []Problem
	Err      error // the underlying error, when there is one
}

// Problem is one mistake in a registry, at a JSON Pointer (RFC 6901) location.
type Problem struct {
	Location string // "/servers/demo/args/1"; "" for the file as a whole
	Message  string
}

func (p Problem) String() string {
	if p.Location == "" {
		return p.Message
	}
	return p.Location + ": " + p.Message
}

func (e *Error) Error() string {
	file := e.File
	if file == "" {
		file = "registry"
	}
	// The file once, then each problem at its location (docs/registry.md).
	var b strings.Builder
	b.WriteString(file)
	b.WriteString(": ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }
