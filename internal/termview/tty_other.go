//go:build !(linux || freebsd || darwin)

package termview

// IsTerminal is false where colibri does not know how to ask: it then
// behaves as it does for an editor or a pipe.
func IsTerminal(any) bool { return false }
