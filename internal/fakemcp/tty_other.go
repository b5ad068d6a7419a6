//go:build !linux

package main

import "os"

// ttyAttempt opens the controlling terminal.
func ttyAttempt() string {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return "no tty: " + err.Error()
	}
	f.Close()
	return "opened the tty"
}
