package main

import (
	"os"
	"path/filepath"
	"runtime"

	"github.com/colibri-mcp/colibri-mcp/host"
)

// sandboxWiring tells the host its launcher (colibri-sandbox installed
// beside this binary, else this binary, re-executed: launcherPath) and
// colibri's own files, which no sandbox may grant: the registry, the token,
// audit, key, pin and env files, and the state folder (pins, OAuth tokens,
// the sandboxes' homes).
func sandboxWiring(opts *host.Options, s *settings) {
	if exe, err := os.Executable(); err == nil {
		opts.Launcher = launcherPath(exe)
	}
	getenv := envLookup(s.environ)
	protect := []string{s.configPath, s.tokenFile, s.auditLog, s.auditKeyFile, s.pinFile, s.envFile}
	if s.pinFile != "" {
		protect = append(protect, s.pinFile+".lock") // internal/pin's lock, beside the file
	}
	state := ""
	if v, ok := getenv("XDG_STATE_HOME"); ok && filepath.IsAbs(v) {
		state = filepath.Join(v, "colibri-mcp")
	} else if home, err := os.UserHomeDir(); err == nil {
		state = filepath.Join(home, ".local", "state", "colibri-mcp")
	}
	opts.StateDir = state
	if state != "" {
		protect = append(protect, filepath.Join(state, "pins.json"), filepath.Join(state, "oauth"), filepath.Join(state, "home"))
	}
	for _, p := range protect {
		if p != "" && p != "-" {
			opts.SandboxProtect = append(opts.SandboxProtect, p)
		}
	}
}

// launcherPath is the sandbox launcher for colibri's binary exe: the small
// colibri-sandbox where make install puts it (PREFIX/libexec/colibri-mcp,
// for PREFIX/bin/colibri-mcp) or beside exe (make build's bin/), whose
// start costs less than colibri's (docs/benchmarks.md); else exe itself.
// Only a regular executable file counts; either way it is as trusted as
// colibri's own binary, whose folders hold it.
func launcherPath(exe string) string {
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
