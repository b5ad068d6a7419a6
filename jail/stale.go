package jail

import (
	"strconv"
	"strings"
)

// Stale returns the ephemeral jails of colibri processes that are gone: of
// the jail names listed (one per line, as `jls name` prints them), those of
// the form colibri_PID_N whose PID is neither self nor alive. A colibri
// killed with SIGKILL cannot remove the jails of its requests, and jail(8)
// keeps each one with a temporary persist (docs/freebsd.md); the next
// colibri removes them at its start. A jail whose PID is alive is left
// alone, whatever process that is now (a pid reused: better kept than
// another colibri's jail removed).
func Stale(listed string, self int, alive func(pid int) bool) []string {
	var stale []string
	for _, name := range strings.Fields(listed) {
		pid, ok := ephemeralPID(name)
		if !ok || pid == self || alive(pid) {
			continue
		}
		stale = append(stale, name)
	}
	return stale
}

// ephemeralPID is the colibri pid in an ephemeral jail's name
// (colibri_PID_N, the names launch gives), or false.
func ephemeralPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "colibri_")
	if !ok {
		return 0, false
	}
	p, n, ok := strings.Cut(rest, "_")
	if !ok || !digits(p) || !digits(n) {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	return pid, err == nil && pid > 0
}

func digits(s string) bool {
	if s == "" || len(s) > 10 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ListArgv is the command that lists every jail's name, one per line
// (jls(8): "jls [parameter ...]" prints the parameters given, "name" here):
// listing needs no privilege.
func ListArgv() []string { return []string{"jls", "name"} }
