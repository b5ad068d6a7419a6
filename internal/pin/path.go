package pin

import (
	"errors"
	"path/filepath"
)

// DefaultRootPath is root's pin file (FreeBSD's place for a daemon's state).
const DefaultRootPath = "/var/db/colibri/pins.json"

// DefaultPath is the pin file of docs/registry.md#settings for a process of
// effective user euid: /var/db/colibri/pins.json for root, else
// $XDG_STATE_HOME/colibri-mcp/pins.json ($HOME/.local/state when
// XDG_STATE_HOME is unset or not absolute, as the XDG base directory
// specification says).
func DefaultPath(euid int, getenv func(string) (string, bool)) (string, error) {
	if euid == 0 {
		return DefaultRootPath, nil
	}
	if s, ok := getenv("XDG_STATE_HOME"); ok && filepath.IsAbs(s) {
		return filepath.Join(s, "colibri-mcp", "pins.json"), nil
	}
	home, ok := getenv("HOME")
	if !ok || !filepath.IsAbs(home) {
		return "", errors.New("no place for the pin file: set HOME or XDG_STATE_HOME, or --pin-file / COLIBRI_MCP_PIN_FILE")
	}
	return filepath.Join(home, ".local", "state", "colibri-mcp", "pins.json"), nil
}
