package oauth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

func TestDefaultDir(t *testing.T) {
	for _, tc := range []struct {
		name string
		euid int
		env  map[string]string
		want string
	}{
		{"root", 0, map[string]string{"HOME": "/root", "XDG_STATE_HOME": "/x"}, "/var/db/colibri/oauth"},
		{"xdg", 1000, map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "/home/u/st"}, "/home/u/st/colibri-mcp/oauth"},
		{"home", 1000, map[string]string{"HOME": "/home/u"}, "/home/u/.local/state/colibri-mcp/oauth"},
		{"relative xdg is ignored", 1000, map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "st"}, "/home/u/.local/state/colibri-mcp/oauth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := defaultDir(tc.euid, env(tc.env))
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := defaultDir(1000, env(nil)); err == nil || !strings.Contains(err.Error(), "oauth.token_file") {
		t.Errorf("no HOME: %v", err)
	}
}

func TestTokenPath(t *testing.T) {
	srv := &registry.Server{Name: "gh", OAuth: &registry.OAuth{Grant: registry.GrantAuthorizationCode}}
	if got, err := TokenPath(srv, "/d", nil); err != nil || got != "/d/gh.json" {
		t.Errorf("got %q, %v", got, err)
	}
	// Registry names match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$, which
	// allows "..": the ".json" suffix keeps every such name a plain file
	// inside the folder.
	for _, name := range []string{"..", ".", "a..b", "..x"} {
		s := &registry.Server{Name: name, OAuth: srv.OAuth}
		if got, err := TokenPath(s, "/d", nil); err != nil || got != "/d/"+name+".json" || filepath.Dir(got) != "/d" {
			t.Errorf("name %q: got %q, %v", name, got, err)
		}
	}
	srv.OAuth.TokenFile = "/etc/../srv/tok.json"
	if got, err := TokenPath(srv, "/d", nil); err != nil || got != "/srv/tok.json" {
		t.Errorf("token_file: got %q, %v", got, err)
	}
	srv.OAuth.TokenFile = "tok.json"
	if _, err := TokenPath(srv, "/d", nil); err == nil || !strings.Contains(err.Error(), `oauth.token_file "tok.json" must be an absolute path`) {
		t.Errorf("relative token_file: %v", err)
	}
}

// Save writes 0600 through a rename (no temporary file left), and Load
// refuses a file that others may read, or that another user owns.
func TestStoreModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "x.json")
	in := &Saved{Server: "x", AccessToken: "at", RefreshToken: "rt", Expiry: time.Unix(1e9, 0).UTC(), SavedAt: time.Unix(1e9, 0).UTC()}
	if err := Save(path, in); err != nil {
		t.Fatal(err)
	}
	assertMode(t, path, 0o600)
	assertMode(t, dir, 0o700)
	if err := Save(path, in); err != nil { // over an existing one
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files left in the folder: %v", entries)
	}
	out, err := Load(path)
	if err != nil || out.AccessToken != "at" || out.RefreshToken != "rt" || !out.Expiry.Equal(in.Expiry) {
		t.Fatalf("load: %+v, %v", out, err)
	}

	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	if err == nil || !strings.Contains(err.Error(), "mode 0640") || !strings.Contains(err.Error(), "chmod 600 "+path) {
		t.Errorf("a 0640 file: %v", err)
	}
	os.Chmod(path, 0o600)

	if os.Geteuid() == 0 {
		if err := os.Chown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("a file of another user: %v", err)
		}
	} else {
		t.Log("not root: the other-owner check is not exercised")
	}

	if _, err := Load(filepath.Join(dir, "none.json")); err != ErrNoToken {
		t.Errorf("missing file: %v", err)
	}
	os.WriteFile(path+"2", []byte(`{"access_token": "secret-at`), 0o600)
	if _, err := Load(path + "2"); err == nil || strings.Contains(err.Error(), "secret-at") {
		t.Errorf("a broken file: %v", err)
	}
}

// The auth commands refuse servers they do not apply to, with a usage
// error that says why.
func TestAuthCommandsRefuse(t *testing.T) {
	for _, tc := range []struct {
		srv  *registry.Server
		want string
	}{
		{&registry.Server{Name: "local", Command: "x"}, `server "local" is not a remote server`},
		{&registry.Server{Name: "r", URL: "https://x/mcp"}, `server "r" has no oauth entry`},
		{ccServer("https://x/mcp", registry.OAuth{ClientID: "c", ClientSecret: "s"}), "uses the client_credentials grant: colibri gets its tokens unattended, with no login"},
	} {
		_, err := GetStatus(tc.srv, Options{Dir: t.TempDir()})
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("status: %v, want a UsageError with %q", err, tc.want)
		}
		if _, _, err := Logout(tc.srv, Options{Dir: t.TempDir()}); !errors.As(err, &ue) {
			t.Errorf("logout: %v", err)
		}
		if _, err := Login(t.Context(), tc.srv, LoginOptions{Options: Options{Dir: t.TempDir()}}); !errors.As(err, &ue) {
			t.Errorf("login: %v", err)
		}
	}
}
