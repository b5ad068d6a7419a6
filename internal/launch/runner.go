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

// deniedWords are how programs say the kernel refused them a file or a
// socket (EACCES, EPERM): Node's, Python's and libc's words.
var deniedWords = []string{"EACCES", "EPERM", "Permission denied", "Operation not permitted", "PermissionError"}

// SandboxDeniedHint is what to say when srv runs in colibri's sandbox and
// its stderr (tail) says the kernel refused it something: it reads like a
// server bug, and is the sandbox keeping to what the entry grants. "" when
// srv has no sandbox or tail says no such thing.
func SandboxDeniedHint(srv *registry.Server, tail string) string {
	if srv.Sandbox == nil || srv.Sandbox.Off || srv.URL != "" {
		return ""
	}
	for _, w := range deniedWords {
		if strings.Contains(tail, w) {
			return `the server runs in colibri's sandbox, which refuses every path its entry does not grant: its "permission denied" is likely the sandbox's; grant what it needs with "read" or "write" in the entry's sandbox (colibri-mcp add --read PATH / --write PATH), and see what colibri-mcp check --probe says (docs/security.md)`
		}
	}
	return ""
}
