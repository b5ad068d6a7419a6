//go:build !unix

package oauth

import "time"

// lockFile has no flock(2) to take off Unix: refreshes are serialized
// within one process only.
func lockFile(string, time.Time, func()) (func(), error) { return func() {}, nil }
