//go:build !(linux || freebsd || darwin)

package main

// isTerminal is false where colibri does not know how to ask: it then
// behaves as it does for an editor or a pipe.
func isTerminal(any) bool { return false }
