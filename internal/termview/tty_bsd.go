//go:build freebsd || darwin

package termview

import "golang.org/x/sys/unix"

// termiosRequest reads a terminal's settings: tcgetattr(3) on the BSDs.
const termiosRequest = unix.TIOCGETA
