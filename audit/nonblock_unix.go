//go:build unix

package audit

import "syscall"

// nonblock opens without waiting: open(2) of a FIFO blocks until its other
// end is opened, and a log or key path that names one (by mistake or by
// malice) must be refused as not a regular file, not hang colibri at start.
const nonblock = syscall.O_NONBLOCK
