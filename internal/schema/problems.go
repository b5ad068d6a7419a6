package schema

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Problem is one reason an instance fails its schema, at a JSON Pointer
// (RFC 6901) location in the instance.
type Problem struct {
	Location string // "/servers/demo/args/1"; "/" for the instance itself
	Message  string
}

func (p Problem) String() string { return p.Location + ": " + p.Message }

var printer = message.NewPrinter(language.English)

// Problems flattens the error of a Schema's Validate into its leaf
// problems, each at the instance location it concerns, sorted by location.
// An error that is not a *jsonschema.ValidationError is one problem at "/".
func Problems(err error) []Problem { return ProblemsWith(err, nil) }

// ProblemsWith is Problems, with unknownKey wording the problem of each key
// that additionalProperties refuses (given the keyword's schema URL), at the
// key's own location: the registry names the closest key it allows.
func ProblemsWith(err error, unknownKey func(schemaURL, key string) string) []Problem {
	return ProblemsOpts(err, Options{UnknownKey: unknownKey})
}

// Options shape ProblemsOpts.
type Options struct {
	// UnknownKey words the problem of each key that additionalProperties
	// refuses (given the keyword's schema URL), at the key's own location.
	UnknownKey func(schemaURL, key string) string
	// SkipNames leaves out propertyNames problems, for a caller that checks
	// the names itself: jsonschema/v6 (v6.0.3) reports them with a location
	// slice it goes on to reuse, so a later sibling may overwrite it.
	SkipNames bool
}

// ProblemsOpts is Problems, with options.
func ProblemsOpts(err error, o Options) []Problem {
	unknownKey := o.UnknownKey
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Location: "/", Message: err.Error()}}
	}
	var ps []Problem
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if pn, ok := e.ErrorKind.(*kind.PropertyNames); ok {
			if o.SkipNames {
				return
			}
			// The name itself is wrong: point at the member, not at its parent.
			// (The parent's location may be wrong: see Options.SkipNames.)
			loc := append(slices.Clone(e.InstanceLocation), pn.Property)
			ps = append(ps, Problem{Location: Pointer(loc), Message: fmt.Sprintf("the name %q is not allowed: %s", pn.Property, leafMessages(e))})
			return
		}
		if ap, ok := e.ErrorKind.(*kind.AdditionalProperties); ok && unknownKey != nil {
			for _, p := range ap.Properties {
				ps = append(ps, Problem{Location: Pointer(append(slices.Clone(e.InstanceLocation), p)), Message: unknownKey(e.SchemaURL, p)})
			}
			return
		}
		if len(e.Causes) == 0 {
			ps = append(ps, Problem{Location: Pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(printer)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.SortStableFunc(ps, func(a, b Problem) int { return strings.Compare(a.Location, b.Location) })
	return slices.Compact(ps)
}

func leafMessages(e *jsonschema.ValidationError) string {
	if len(e.Causes) == 0 {
		return e.ErrorKind.LocalizedString(printer)
	}
	msgs := make([]string, 0, len(e.Causes))
	for _, c := range e.Causes {
		msgs = append(msgs, leafMessages(c))
	}
	return strings.Join(msgs, "; ")
}

// Pointer is the JSON Pointer of tokens ("/" for none).
func Pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(EscapePointer(t))
	}
	return b.String()
}

// EscapePointer escapes one JSON Pointer token (RFC 6901: ~ is ~0, / is ~1).
func EscapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
