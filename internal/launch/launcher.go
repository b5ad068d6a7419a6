package launch

import (
	"os"
	"path/filepath"
	"runtime"
)

// LauncherFor is the sandbox launcher (Config.Launcher) for colibri's
// binary exe: the small colibri-sandbox where make install puts it
// (PREFIX/libexec/colibri-mcp, for PREFIX/bin/colibri-mcp) or beside exe
// (make build's bin/), whose start costs less than colibri's
// (docs/benchmarks.md); else exe itself, re-executed. Only a regular
// executable file counts; either way it is as trusted as colibri's own
// binary, whose folders hold it.
func LauncherFor(exe string) string {
	if runtime.GOOS != "linux" {
		return exe
	}
	dir := filepath.Dir(exe)
	for _, p := range []string{filepath.Join(filepath.Dir(dir), "libexec", "colibri-mcp", "colibri-sandbox"), filepath.Join(dir, "colibri-sandbox")} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return exe
}
