//go:build !unix

package statedir

import (
	"io/fs"
	"os"
)

// owner is unknown outside Unix.
func owner(fs.FileInfo) (int, bool) { return 0, false }

// writable is asked of the folder's mode outside Unix.
func writable(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.Mode().Perm()&0o200 != 0
}
