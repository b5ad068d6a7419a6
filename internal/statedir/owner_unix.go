//go:build unix

package statedir

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// owner is fi's owner's uid.
func owner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// writable says whether colibri may create an entry in the folder dir.
func writable(dir string) bool {
	return unix.Access(dir, unix.W_OK|unix.X_OK) == nil
}
