package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// ttyAttempt opens the controlling terminal and pushes one keystroke into
// its input queue, as a hostile server would to type into the operator's
// shell.
func ttyAttempt() string {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return "no tty: " + err.Error()
	}
	defer f.Close()
	c := byte('#')
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.TIOCSTI, int(c)); err != nil {
		return "opened the tty; TIOCSTI: " + err.Error()
	}
	return "opened the tty; TIOCSTI pushed a keystroke"
}
