//go:build !linux

package registry

import "runtime"

// sandboxAvailable: the Linux sandbox is Linux's.
const sandboxAvailable = false

var sandboxElsewhere = `"sandbox" is Linux confinement, not available on ` + runtime.GOOS + ` (on FreeBSD, confine the server with "jail")`
