package tools

import (
	"errors"
	"path/filepath"
	"regexp"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// absPath is an absolute path in a message: a "/" that starts the message
// or follows a space, a quote, an opening parenthesis or "=", up to the next
// space, quote, comma, semicolon or parenthesis. A URL's path
// ("https://host/mcp") follows ":" or a host name, and is left alone.
var absPath = regexp.MustCompile(`(^|[\s"'(=])/[^\s"'(),;]*`)

// withoutFolders is msg with each absolute path cut to its last element:
// what callers over HTTP read names the file, never a folder of the
// machine colibri runs on (CONTRACT.md section 7; the operator's log keeps
// the whole path).
func withoutFolders(msg string) string {
	return absPath.ReplaceAllStringFunc(msg, func(m string) string {
		lead := ""
		if m[0] != '/' {
			lead, m = m[:1], m[1:]
		}
		return lead + filepath.Base(m)
	})
}

// detail is Detail, less the folders of this machine when the service
// answers callers over HTTP (Options.HideFolders). A registry error is left
// as it is: the registry made it public already (registry.PublicError: the
// file's name alone), and its JSON locations (/servers/a/argz) are not
// paths of this machine.
func (s *Service) detail(err error) *ErrorDetail {
	d := Detail(err)
	var regErr *registry.Error
	if s.opts.HideFolders && !errors.As(err, &regErr) {
		d.Message = withoutFolders(d.Message)
	}
	return d
}

// errorResult is ErrorResult, less the folders of this machine when the
// service answers callers over HTTP.
func (s *Service) errorResult(err error) *mcp.CallToolResult {
	return resultOf(s.detail(err))
}
