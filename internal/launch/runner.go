package launch

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// runners are the package runners that fetch a package on a start that
// finds it in no cache: their first start (or one after the cache was
// cleared) downloads it, silently, before the server speaks. install says
// how to install it in advance; cache how to fill the runner's cache in
// the HOME colibri runs with ("" where there is no such way).
var runners = map[string]struct{ install, cache string }{
	"npx":  {"npm install -g PKG@VERSION (then make the entry run its binary)", "run 'npx -y PKG@VERSION --help' once where colibri runs to fill npm's cache"},
	"bunx": {"bun add -g PKG@VERSION (then make the entry run its binary)", ""},
	"uvx":  {"uv tool install PKG==VERSION (then make the entry run the tool)", "run 'uvx PKG@VERSION --help' once where colibri runs to fill uv's cache"},
	"pipx": {"pipx install PKG==VERSION (then make the entry run its binary)", ""},
}

// RunnerHint is what to say when srv, started by a package runner (npx,
// uvx, pipx, bunx), did not answer initialize: timedOut when it ran out
// of time, else it ended or refused. The runner may have been downloading
// the package (or, with "net": false in its sandbox, could not); the hint
// says how to install it in advance, with the package the entry names. A
// sandboxed server runs with a private HOME, so its runner's cache is not
// the one a run in colibri's HOME fills: that way is not offered for it.
// "" for any other command, or a failure the runner did not cause.
func RunnerHint(srv *registry.Server, timedOut bool) string {
	base := strings.TrimSuffix(filepath.Base(srv.Command), ".exe")
	r, ok := runners[base]
	if !ok || srv.URL != "" {
		return ""
	}
	sandboxed := srv.Sandbox != nil && !srv.Sandbox.Off
	install := r.install
	if r.cache != "" && !sandboxed {
		install += ", or " + r.cache
	}
	if name, version := runnerPackage(base, srv.Args); name != "" {
		spec, pySpec := name, name
		if version != "" {
			spec, pySpec = name+"@"+version, name+"=="+version
		}
		install = strings.NewReplacer("PKG@VERSION", spec, "PKG==VERSION", pySpec).Replace(install)
	}
	switch {
	case sandboxed && !srv.Sandbox.NetAllowed():
		return fmt.Sprintf(`%s fetches the package on a start that finds it in no cache, and this entry's sandbox has no network ("net": false): install it in advance, %s; or let the sandbox reach the package registry for a start, its private HOME keeping the cache for the next (docs/registry.md, "From the MCP Registry")`, base, install)
	case timedOut:
		return fmt.Sprintf(`%s may be downloading the package (its first start, or one after its cache was cleared), which can take longer than timeout_ms: install it in advance, %s (docs/registry.md, "From the MCP Registry")`, base, install)
	}
	return ""
}

// runnerPackage is the package a runner's args name, split at its
// version ("@scope/pkg@1.2.3": "@scope/pkg", "1.2.3"): the first argument
// that is no option (pipx's after "run"); "" when there is none.
func runnerPackage(runner string, args []string) (name, version string) {
	for i, a := range args {
		if strings.HasPrefix(a, "-") || runner == "pipx" && i == 0 && a == "run" {
			continue
		}
		name = a
		if n, v, ok := strings.Cut(a, "=="); ok && (runner == "uvx" || runner == "pipx") {
			name, version = n, v
		} else if at := strings.LastIndex(a, "@"); at > 0 {
			// An npm scope's @ begins the name; the version's follows it.
			name, version = a[:at], a[at+1:]
		}
		// Only what reads as a package: an option's value (uvx --from
		// git+https://…) is never shown as one.
		if !packageName.MatchString(name) || !packageVersion.MatchString(version) {
			return "", ""
		}
		return name, version
	}
	return "", ""
}

var (
	packageName    = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*$`)
	packageVersion = regexp.MustCompile(`^[A-Za-z0-9.+_-]*$`)
)

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
