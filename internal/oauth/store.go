package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Saved is what a token file holds: the tokens of one server, and what
// refreshing them needs (the token endpoint, the client, the resource), so
// that a later process refreshes without discovery or a browser.
type Saved struct {
	Server       string    `json:"server"`
	URL          string    `json:"url"` // the MCP server's URL when the login ran
	TokenType    string    `json:"token_type,omitempty"`
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scopes       []string  `json:"scopes,omitempty"`

	TokenEndpoint string `json:"token_endpoint"`
	// AuthStyle is how the client authenticates at the token endpoint:
	// "header" (HTTP Basic), "params" (in the form), "" (Basic when there
	// is a secret).
	AuthStyle string `json:"auth_style,omitempty"`
	ClientID  string `json:"client_id"`
	// ClientSecret is kept only when dynamic client registration issued it;
	// a pre-registered client's secret stays in the registry.
	ClientSecret  string `json:"client_secret,omitempty"`
	DynamicClient bool   `json:"dynamic_client,omitempty"`
	Resource      string `json:"resource,omitempty"`

	SavedAt time.Time `json:"saved_at"`
	// StepUp is the scopes a server asked for since the login (403
	// insufficient_scope), which the next login asks for too.
	StepUp []string `json:"step_up_scopes,omitempty"`
}

// DefaultRootDir is where root's token files go (FreeBSD's place for a
// daemon's state).
const DefaultRootDir = "/var/db/colibri/oauth"

// TokenPath is where the tokens of srv are kept: oauth.token_file, or
// DIR/SERVER.json where DIR is dir when it is not empty, else
// /var/db/colibri/oauth for root, else $XDG_STATE_HOME/colibri-mcp/oauth
// ($HOME/.local/state when XDG_STATE_HOME is unset or not absolute, as the
// XDG base directory specification says).
func TokenPath(srv *registry.Server, dir string, getenv func(string) (string, bool)) (string, error) {
	if srv.OAuth != nil && srv.OAuth.TokenFile != "" {
		p := srv.OAuth.TokenFile
		if !filepath.IsAbs(p) {
			return "", fmt.Errorf("oauth.token_file %q must be an absolute path", p)
		}
		return filepath.Clean(p), nil
	}
	if dir == "" {
		var err error
		if dir, err = defaultDir(os.Geteuid(), getenv); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, srv.Name+".json"), nil
}

func defaultDir(euid int, getenv func(string) (string, bool)) (string, error) {
	if euid == 0 {
		return DefaultRootDir, nil
	}
	if s, ok := getenv("XDG_STATE_HOME"); ok && filepath.IsAbs(s) {
		return filepath.Join(s, "colibri-mcp", "oauth"), nil
	}
	home, ok := getenv("HOME")
	if !ok || !filepath.IsAbs(home) {
		return "", errors.New("no place for OAuth token files: set HOME or XDG_STATE_HOME, or oauth.token_file in the registry")
	}
	return filepath.Join(home, ".local", "state", "colibri-mcp", "oauth"), nil
}

// ErrNoToken is a token file that does not exist: the server was never
// logged in (or was logged out).
var ErrNoToken = errors.New("no saved token")

// errSymlink is a symbolic link at a token file's path.
var errSymlink = errors.New("symbolic link")

// Load reads a token file. A missing file is ErrNoToken. A file that group
// or others may read or write, or that another user owns, is refused: the
// tokens in it may have been seen or planted by someone else. So is a
// symbolic link: it could make colibri send another file's tokens (another
// server's) to this server.
func Load(path string) (*Saved, error) {
	f, err := openToken(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoToken
	}
	if errors.Is(err, errSymlink) {
		return nil, fmt.Errorf("token file %s is a symbolic link: colibri reads only the file itself (remove the link and log in again, or point oauth.token_file at the real file)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("token file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("token file %s is open to group or others (mode %04o): run chmod 600 %s", path, perm, path)
	}
	if err := checkOwner(path, fi); err != nil {
		return nil, err
	}
	var s Saved
	dec := json.NewDecoder(f)
	if err := dec.Decode(&s); err != nil {
		// The decoder's error names a position and a type, never the
		// file's content.
		return nil, fmt.Errorf("token file %s is not valid JSON: %w", path, err)
	}
	return &s, nil
}

// Save writes s to path, mode 0600, atomically: a temporary file in the
// same folder, synced, then renamed over the old one, so that a reader (or
// a crash) never sees half a file. Missing parent folders are created 0700.
func Save(path string, s *Saved) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding tokens: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the token folder: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*") // mode 0600
	if err != nil {
		return fmt.Errorf("writing token file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("writing token file: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("writing token file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing token file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing token file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing token file: %w", err)
	}
	if d, err := os.Open(dir); err == nil { // make the rename durable
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Remove deletes a token file; removed is false when there was none.
func Remove(path string) (removed bool, err error) {
	err = os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("removing token file: %w", err)
	}
	return true, nil
}
