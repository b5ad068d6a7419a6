// Package answer shapes what colibri answers a call with: its own failure
// as the contract's colibri_error (docs/registry.md#error-kinds: isError, a text
// "colibri: KIND: …" that ends with the server's last stderr lines, and
// structuredContent {"colibri_error": …}, every string clipped), and a
// result whose structuredContent is a value.
//
//	return answer.Error(err)           // a *failure.Error, or a bug of colibri's
//	return answer.Structured(servers)  // the same JSON as text, for clients that read only text
package answer

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
)

// ErrorDetail is a colibri failure, as the contract shapes colibri_error.
type ErrorDetail struct {
	Kind       failure.Kind  `json:"kind"`
	Message    string        `json:"message"`
	Server     string        `json:"server,omitempty"`
	Tool       string        `json:"tool,omitempty"`
	Phase      failure.Phase `json:"phase,omitempty"`
	StderrTail string        `json:"stderr_tail,omitempty"`
	Attempts   int           `json:"attempts,omitempty"`
	HTTPStatus int           `json:"http_status,omitempty"` // a remote server's last HTTP status
}

// Detail turns any error into the contract's colibri_error. An error that is
// not a *failure.Error is a bug of colibri's, and says so.
func Detail(err error) *ErrorDetail {
	var e *failure.Error
	if !errors.As(err, &e) {
		return &ErrorDetail{Kind: failure.KindInternal, Message: failure.ClipMessage("internal error (a bug in colibri-mcp; please report it): " + err.Error())}
	}
	// Every string here may quote a caller's or a hosted server's: each is
	// clipped, so that an error is a few KiB whatever was sent.
	d := &ErrorDetail{
		Kind:       e.Kind,
		Message:    failure.ClipMessage(e.Error()),
		Server:     failure.ClipName(e.Server),
		Tool:       failure.ClipName(e.Tool),
		Phase:      e.Phase,
		StderrTail: e.StderrTail,
		HTTPStatus: e.HTTPStatus,
	}
	if e.Attempts > 1 {
		d.Attempts = e.Attempts
	}
	return d
}

// stderrLinesShown and stderrBytesShown bound the stderr tail an error's
// text ends with (structuredContent has the whole 4 KiB tail).
const (
	stderrLinesShown = 5
	stderrBytesShown = 1 << 10
)

// Error is a colibri failure as the contract shapes it: isError, a text
// beginning "colibri: KIND: ", and structuredContent {"colibri_error": …}.
func Error(err error) *mcp.CallToolResult { return Carrying(Detail(err)) }

// Carrying is the result that carries d.
func Carrying(d *ErrorDetail) *mcp.CallToolResult {
	text := fmt.Sprintf("colibri: %s: %s", d.Kind, d.Message)
	if d.StderrTail != "" {
		// What a model reads is the text: the server's own last words
		// ("missing API key") say why, bounded and already redacted.
		text += "\nthe server's stderr ended with:\n" + failure.LastLines(d.StderrTail, stderrLinesShown, stderrBytesShown)
	}
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: map[string]any{"colibri_error": d},
	}
}

// Structured is a result whose structuredContent is v, with the same JSON
// as text content for clients that read only text.
func Structured(v any) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return Error(fmt.Errorf("encoding the result: %w", err))
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}
}

// Of is the colibri_error of a result of colibri's own (Error, Carrying),
// or nil for a hosted result passed through.
func Of(res *mcp.CallToolResult) *ErrorDetail {
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok {
		return nil
	}
	d, _ := sc["colibri_error"].(*ErrorDetail)
	return d
}

// absPath is an absolute path in a message: a "/" that starts the message
// or follows a space, a quote, an opening parenthesis or "=", up to the next
// space, quote, comma, semicolon or parenthesis. A URL's path
// ("https://host/mcp") follows ":" or a host name, and is left alone.
var absPath = regexp.MustCompile(`(^|[\s"'(=])/[^\s"'(),;]*`)

// WithoutFolders is msg with each absolute path cut to its last element:
// what callers over HTTP read names the file, never a folder of the
// machine colibri runs on (docs/security.md#the-network-face; the operator's log keeps
// the whole path).
func WithoutFolders(msg string) string {
	return absPath.ReplaceAllStringFunc(msg, func(m string) string {
		lead := ""
		if m[0] != '/' {
			lead, m = m[:1], m[1:]
		}
		return lead + filepath.Base(m)
	})
}
