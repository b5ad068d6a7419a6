package main

import (
	"os"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/launch"
)

// sandboxWiring tells the host its launcher (colibri-sandbox installed
// beside this binary, else this binary, re-executed: launch.LauncherFor) and
// colibri's own files, which no sandbox may grant: the registry, the token,
// audit, key, pin and env files, and the state folder (pins, OAuth tokens,
// the sandboxes' homes).
func sandboxWiring(opts *host.Options, s *settings) {
	if exe, err := os.Executable(); err == nil {
		opts.Launcher = launch.LauncherFor(exe)
	}
	protect := []string{s.configPath, s.tokenFile, s.auditLog, s.auditKeyFile, s.pinFile, s.envFile}
	if s.pinFile != "" {
		protect = append(protect, s.pinFile+".lock") // internal/pin's lock, beside the file
	}
	opts.StateDir, opts.StateErr = s.state.Path, s.state.Err
	if s.state.Path != "" {
		protect = append(protect, s.state.Join("pins.json"), s.state.Join("oauth"), s.state.Join("home"))
	}
	for _, p := range protect {
		if p != "" && p != "-" {
			opts.SandboxProtect = append(opts.SandboxProtect, p)
		}
	}
}
