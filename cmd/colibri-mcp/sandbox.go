package main

import (
	"os"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/launch"
	"github.com/colibri-mcp/colibri-mcp/internal/oauth"
)

// sandboxWiring tells the host its launcher (colibri-sandbox installed
// beside this binary, else this binary, re-executed: launch.LauncherFor) and
// colibri's own files, which no sandbox may grant: the registry, the token,
// audit, key, pin and env files, and the state folder (pins, OAuth tokens,
// the sandboxes' homes); each entry's oauth.token_file comes with the
// registry (registry.Server.TokenFiles).
func sandboxWiring(opts *host.Options, s *settings) {
	if exe, err := os.Executable(); err == nil {
		opts.Launcher = launch.LauncherFor(exe)
	}
	protect := []string{s.configPath, s.tokenFile, s.auditLog, s.auditKeyFile, s.pinFile, s.envFile}
	if s.pinFile != "" {
		protect = append(protect, s.pinFile+".lock") // internal/pin's lock, beside the file
	}
	opts.StateDir, opts.StateErr = s.state.Path, s.state.Err
	// The whole state folder (pins, OAuth tokens, the sandboxes' homes and
	// temporary folders), and root's default place for OAuth tokens.
	protect = append(protect, s.state.Path)
	if os.Geteuid() == 0 {
		protect = append(protect, oauth.DefaultRootDir)
	}
	for _, p := range protect {
		if p != "" && p != "-" {
			opts.SandboxProtect = append(opts.SandboxProtect, p)
		}
	}
}
