//go:build unix

package pin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
)

// trusted refuses a pin file that another user owns, or that group or
// others may write: whoever can write it decides which tools colibri
// trusts. A lock (only ever read, shipped in an image) may be root's too,
// and readable by all (0644).
func trusted(st os.FileInfo, lock bool) error {
	if st.Mode().Perm()&0o022 != 0 {
		fix := "run chmod 600 on it"
		if lock {
			fix = "run chmod 644 on it"
		}
		return fmt.Errorf("is writable by group or others (mode %04o): whoever can write it decides which tools are trusted; %s", st.Mode().Perm(), fix)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || int(sys.Uid) == os.Geteuid() || (lock && sys.Uid == 0) {
		return nil
	}
	if lock {
		return fmt.Errorf("is owned by uid %d, neither root nor this process's user (%d): whoever owns it decides which tools are trusted; run chown root on it (or chown it to uid %d)", sys.Uid, os.Geteuid(), os.Geteuid())
	}
	return fmt.Errorf("is owned by uid %d, not by this process's user (%d): whoever can write it decides which tools are trusted", sys.Uid, os.Geteuid())
}

// lockWaits, when set (by a test), is called each time lock finds the lock
// held by another.
var lockWaits func()

// lock takes an exclusive flock(2) on path+".lock" (created 0600), the lock
// every colibri process sharing the pin file takes around a read, merge and
// write. It polls until timeout rather than blocking, so that a stuck
// process holding it cannot hang this one.
func lock(path string, timeout time.Duration) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	lp := path + ".lock"
	f, err := safefile.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	unlock, err = safefile.Flock(f, time.Now().Add(timeout), lockWaits)
	if errors.Is(err, safefile.ErrHeld) {
		return nil, fmt.Errorf("another process has held %s for more than %s", lp, timeout)
	}
	return unlock, err
}
