//go:build !linux

package proc

import (
	"os"
	"time"
)

// pipeUnread cannot tell what a pipe holds here: FreeBSD's pipes are two
// one-way buffers, and FIONREAD on our end answers for the one we read,
// not the one the server reads. A call to a server that exited is then
// never taken for one it did not read (it is not made again).
func pipeUnread(*os.File, time.Duration) (int64, bool) { return 0, false }
