//go:build linux || freebsd || darwin

package main

import (
	"golang.org/x/sys/unix"
)

// isTerminal reports whether v is a file open on a terminal: a person is
// there, rather than an editor or a pipe.
func isTerminal(v any) bool {
	f, ok := v.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), termiosRequest)
	return err == nil
}
