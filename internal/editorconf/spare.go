package editorconf

import (
	"fmt"
	"path"
	"regexp"
)

// slowStarters are interpreters and package runners whose servers spend
// most of a per-request call starting (Node loading modules, a package
// runner resolving the package): "spare" pays for itself there.
var slowStarters = regexp.MustCompile(`^(npx|uvx|node|nodejs|python|python3(\.[0-9]+)?|pipx|bunx|deno)$`)

// SlowStarter reports whether command (as the registry names it, a path or
// a bare name) is one of the slow starters.
func SlowStarter(command string) bool {
	return command != "" && slowStarters.MatchString(path.Base(command))
}

// SpareHint is the suggestion that import (and add) print for a command
// entry whose command is a slow starter, or "" for any other entry.
func SpareHint(e *Entry) string {
	if e.Remote() || !SlowStarter(e.Command) {
		return ""
	}
	return fmt.Sprintf(`%s starts slowly: "spare": 1 in its entry keeps one process started ahead, so that a request skips the start (one idle process and its memory; docs/registry.md)`, path.Base(e.Command))
}
