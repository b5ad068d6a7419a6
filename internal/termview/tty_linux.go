package termview

import "golang.org/x/sys/unix"

// termiosRequest reads a terminal's settings: tcgetattr(3) on Linux.
const termiosRequest = unix.TCGETS
