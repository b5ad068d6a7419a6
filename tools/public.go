package tools

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools/answer"
)

// detail is Detail, less the folders of this machine when the service
// answers callers over HTTP (Options.HideFolders). A registry error is left
// as it is: the registry made it public already (registry.PublicError: the
// file's name alone), and its JSON locations (/servers/a/argz) are not
// paths of this machine.
func (s *Service) detail(err error) *ErrorDetail {
	d := Detail(err)
	var regErr *registry.Error
	if s.opts.HideFolders && !errors.As(err, &regErr) {
		d.Message = answer.WithoutFolders(d.Message)
	}
	return d
}

// errorResult is ErrorResult, less the folders of this machine when the
// service answers callers over HTTP.
func (s *Service) errorResult(err error) *mcp.CallToolResult {
	return answer.Carrying(s.detail(err))
}
