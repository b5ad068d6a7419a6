//go:build !unix

package oauth

import "io/fs"

// checkOwner has no owner to compare off Unix.
func checkOwner(string, fs.FileInfo) error { return nil }
