//go:build !unix

package oauth

import (
	"io/fs"
	"os"
)

// checkOwner has no owner to compare off Unix.
func checkOwner(string, fs.FileInfo) error { return nil }

// openToken opens a token file for reading, refusing a symbolic link.
func openToken(path string) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errSymlink
	}
	return os.Open(path)
}
