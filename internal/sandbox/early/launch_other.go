//go:build !linux

package early

import (
	"os"
	"syscall"
)

// Run is the launcher when args are its argv: off Linux it writes that the
// sandbox is Linux's (on FreeBSD the jail is the sandbox, and the registry
// refuses "sandbox" elsewhere) and exits with status 126.
func Run(args []string) {
	if !IsLauncher(args) {
		return
	}
	os.Stderr.WriteString("colibri sandbox: the sandbox is Linux's\n")
	syscall.Exit(126)
}
