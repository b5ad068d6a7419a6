//go:build unix

package safefile

import "syscall"

// extraFlags: never block in open(2) (a FIFO with no writer, a terminal or
// device that waits for carrier), never follow a link at the last component.
const extraFlags = syscall.O_NONBLOCK | syscall.O_NOFOLLOW | syscall.O_CLOEXEC

// followFlags: OpenFollowing never blocks in open(2) either, but follows a link.
const followFlags = syscall.O_NONBLOCK | syscall.O_CLOEXEC
