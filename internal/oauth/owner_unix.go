//go:build unix

package oauth

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
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

// openToken opens a token file for reading without following a symbolic
// link at its last component (O_NOFOLLOW): Save never writes through one,
// and reading through one would serve another file's tokens.
func openToken(path string) (*os.File, error) {
	// opfile never waits in open(2): a FIFO at the path is refused at once
	// instead of hanging auth status, list-tools and call.
	f, err := safefile.Open(path)
	if err != nil {
		// Linux says ELOOP, FreeBSD EMLINK: ask the file itself.
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, errSymlink
		}
	}
	return f, err
}
