//go:build linux || freebsd || darwin

package termview

import (
	"golang.org/x/sys/unix"
)

// IsTerminal reports whether v is a file open on a terminal: a person is
// there, rather than an editor or a pipe.
func IsTerminal(v any) bool {
	f, ok := v.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), termiosRequest)
	return err == nil
}
