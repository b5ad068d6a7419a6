//go:build unix

package oauth

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a token file that another user owns.
func checkOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return fmt.Errorf("token file %s belongs to uid %d, not to colibri's uid %d: remove it and log in again", path, st.Uid, euid)
	}
	return nil
}
