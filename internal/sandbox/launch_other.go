//go:build !linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
)

// DetectABI is 0: Landlock is Linux's.
func DetectABI() int { return 0 }

// Launch fails: the sandbox is Linux's (on FreeBSD the jail is the
// sandbox), and the registry refuses "sandbox" elsewhere.
func Launch(args []string) int {
	fmt.Fprintf(os.Stderr, "colibri sandbox: not available on %s\n", runtime.GOOS)
	return 126
}
