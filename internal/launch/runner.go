package launch

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// runners are the package runners that fetch a package on a start that
// finds it in no cache: their first start (or one after the cache was
// cleared) downloads it, silently, before the server speaks.
var runners = map[string]string{
	"npx":  "npm install -g PKG@VERSION (then make the entry run its binary), or run 'npx -y PKG@VERSION --help' once where colibri runs to fill npm's cache",
	"bunx": "bun add -g PKG@VERSION (then make the entry run its binary)",
	"uvx":  "uv tool install PKG==VERSION (then make the entry run the tool), or run 'uvx PKG@VERSION --help' once where colibri runs to fill uv's cache",
	"pipx": "pipx install PKG==VERSION (then make the entry run its binary)",
}

// RunnerHint is what to say when srv, started by a package runner (npx,
// uvx, pipx, bunx), did not answer initialize: timedOut when it ran out
// of time, else it ended or refused. The runner may have been downloading
// the package (or, with "net": false in its sandbox, could not); the hint
// says how to install it in advance. "" for any other command, or a
// failure the runner did not cause.
func RunnerHint(srv *registry.Server, timedOut bool) string {
	base := strings.TrimSuffix(filepath.Base(srv.Command), ".exe")
	install, ok := runners[base]
	if !ok || srv.URL != "" {
		return ""
	}
	noNet := srv.Sandbox != nil && !srv.Sandbox.Off && !srv.Sandbox.NetAllowed()
	switch {
	case noNet:
		return fmt.Sprintf(`%s fetches the package on a start that finds it in no cache, and this entry's sandbox has no network ("net": false): install it in advance, %s; or let the sandbox reach the package registry (docs/registry.md, "From the MCP Registry")`, base, install)
	case timedOut:
		return fmt.Sprintf(`%s may be downloading the package (its first start, or one after its cache was cleared), which can take longer than timeout_ms: install it in advance, %s (docs/registry.md, "From the MCP Registry")`, base, install)
	}
	return ""
}
