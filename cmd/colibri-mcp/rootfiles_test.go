package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/pin"
)

// check --root reads the service's own files in the image, never the build
// host's: the image's env file (the rc.d script's provider.env), the state
// folder and pin file it names (else /var/db/colibri and its pins.json),
// each a path of the image. A lock that holds a server the registry lacks
// is a warning (exit 1); one that does not parse, or is a link, a config
// error naming it (exit 2); a state folder in the image that is a link or
// writable by others fails the servers that need it.
func TestRootImageServiceFiles(t *testing.T) {
	t.Parallel()
	img := t.TempDir()
	etc := filepath.Join(img, "usr/local/etc/colibri")
	os.MkdirAll(etc, 0o755)
	os.MkdirAll(filepath.Join(img, "usr/local/libexec/colibri-mcp"), 0o755)
	copyFile(t, demoBin, filepath.Join(img, "usr/local/libexec/colibri-mcp/demo-mcp-server"), 0o755)
	writeImageRegistry := func(locked bool) {
		doc := map[string]any{"servers": map[string]any{"demo": map[string]any{"command": imageDemo}}}
		if locked {
			doc["pin"] = "locked"
		}
		b, _ := json.Marshal(doc)
		if err := os.WriteFile(filepath.Join(etc, "external-mcp.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A lock made as pins export makes one, holding a server "gone".
	staging := pin.Open(filepath.Join(t.TempDir(), "pins.json"), pin.Options{})
	if _, err := staging.Check("gone", pin.NoCaps, []*mcp.Tool{{Name: "t", InputSchema: map[string]any{"type": "object"}}}); err != nil {
		t.Fatal(err)
	}
	lock, err := staging.Export()
	if err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(etc, "pins.lock")
	os.WriteFile(lockPath, lock, 0o644)
	// provider.env links to a file of the image by an absolute path (one
	// the build host lacks): it is read there, inside the image, as rc.subr
	// will read it.
	os.MkdirAll(filepath.Join(img, "srv/env"), 0o755)
	os.WriteFile(filepath.Join(img, "srv/env/provider.env"), []byte("COLIBRI_MCP_PIN_FILE=/usr/local/etc/colibri/pins.lock\n"), 0o600)
	os.Symlink("/srv/env/provider.env", filepath.Join(etc, "provider.env"))
	// The build host's own settings are not the image's.
	env := []string{"COLIBRI_MCP_EXTERNAL_CONFIG=", "COLIBRI_MCP_PIN_FILE=", "COLIBRI_MCP_STATE_DIR=", "COLIBRI_MCP_ENV_FILE="}
	type result struct {
		OK       bool     `json:"ok"`
		EnvFile  string   `json:"env_file"`
		StateDir string   `json:"state_dir"`
		PinFile  string   `json:"pin_file"`
		Warnings []string `json:"warnings"`
		Error    *struct {
			Message string `json:"message"`
		} `json:"error"`
		Servers []struct {
			OK    bool `json:"ok"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"servers"`
	}
	check := func(args ...string) (int, result, string) {
		t.Helper()
		code, out, stderr := runCLI(t, env, append([]string{"check", "--root", img, "--json"}, args...)...)
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil && code != 2 {
			t.Fatalf("check --root %v: exit %d, %v\n%s%s", args, code, err, out, stderr)
		}
		return code, r, out + stderr
	}

	writeImageRegistry(true)
	code, r, out := check()
	if code != 1 || r.EnvFile != imageEnvFile || r.PinFile != "/usr/local/etc/colibri/pins.lock" || r.StateDir != "/var/db/colibri" {
		t.Fatalf("the image's files: exit %d\n%s", code, out)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "holds server gone, which the registry does not have") {
		t.Errorf("a lock holding a server the registry lacks: %q", r.Warnings)
	}
	// The text names them too.
	if _, text, _ := runCLI(t, env, "check", "--root", img); !strings.Contains(text, "in the image: env file "+imageEnvFile+", state folder /var/db/colibri, pin file /usr/local/etc/colibri/pins.lock") {
		t.Errorf("check --root's text:\n%s", text)
	}
	// --state-dir and --pin-file are paths of the image too.
	if _, r, out := check("--state-dir", "/srv/colibri", "--pin-file", "/srv/pins.lock"); r.StateDir != "/srv/colibri" || r.PinFile != "/srv/pins.lock" || r.Error == nil ||
		!strings.Contains(r.Error.Message, "/srv/pins.lock") {
		t.Errorf("--state-dir, --pin-file (a lock missing from the image): %s", out)
	}

	// A lock that does not parse, and a lock that is a link (inside the
	// image), are config errors naming the image's file.
	os.WriteFile(lockPath, []byte("{not json"), 0o644)
	if code, r, out := check(); code != 2 || r.Error == nil || !strings.Contains(r.Error.Message, "the image's pin file (under "+img+"): pin file /usr/local/etc/colibri/pins.lock: is not valid JSON") {
		t.Errorf("a lock that does not parse: exit %d\n%s", code, out)
	}
	os.Remove(lockPath)
	os.WriteFile(filepath.Join(etc, "real.lock"), lock, 0o644)
	os.Symlink("/usr/local/etc/colibri/real.lock", lockPath)
	if code, r, out := check(); code != 2 || r.Error == nil || !strings.Contains(r.Error.Message, "/usr/local/etc/colibri/pins.lock: not a regular file: it is a symbolic link") {
		t.Errorf("a lock that is a link: exit %d\n%s", code, out)
	}

	// Unlocked, the pins are the state folder's: one that is a link in
	// the image, or writable by others, fails the server that needs it.
	writeImageRegistry(false)
	os.Remove(filepath.Join(etc, "provider.env"))
	os.MkdirAll(filepath.Join(img, "var/db"), 0o755)
	os.MkdirAll(filepath.Join(img, "var/db/real"), 0o700)
	os.Symlink("/var/db/real", filepath.Join(img, "var/db/colibri"))
	code, r, out = check()
	if code != 1 || r.EnvFile != "" || r.PinFile != "/var/db/colibri/pins.json" || len(r.Servers) != 1 || r.Servers[0].OK ||
		!strings.Contains(r.Servers[0].Error.Message, "state folder /var/db/colibri cannot be used (it is a symbolic link") {
		t.Errorf("a state folder that is a link: exit %d\n%s", code, out)
	}
	os.Remove(filepath.Join(img, "var/db/colibri"))
	os.Mkdir(filepath.Join(img, "var/db/colibri"), 0o700)
	os.Chmod(filepath.Join(img, "var/db/colibri"), 0o777)
	if code, r, out := check(); code != 1 || len(r.Servers) != 1 || r.Servers[0].OK || !strings.Contains(r.Servers[0].Error.Message, "group or others may write") {
		t.Errorf("a state folder others may write: exit %d\n%s", code, out)
	}
	os.Chmod(filepath.Join(img, "var/db/colibri"), 0o700)
	if code, _, out := check(); code != 0 {
		t.Errorf("a usable state folder: exit %d\n%s", code, out)
	}
	// A missing state folder is made by the rc.d script at start.
	os.Remove(filepath.Join(img, "var/db/colibri"))
	if code, _, out := check(); code != 0 {
		t.Errorf("no state folder yet: exit %d\n%s", code, out)
	}

	// An env file named for the image that it lacks, or others may read.
	if code, _, out := check("--env-file", "/usr/local/etc/colibri/missing.env"); code != 2 || !strings.Contains(out, "missing.env") {
		t.Errorf("--env-file missing from the image: exit %d\n%s", code, out)
	}
	os.WriteFile(filepath.Join(etc, "provider.env"), []byte("A=b\n"), 0o644)
	if code, _, out := check(); code != 2 || !strings.Contains(out, "the image's env file "+imageEnvFile) {
		t.Errorf("an env file others may read: exit %d\n%s", code, out)
	}
	// check reports it; editing the image is not stopped by it.
	if code, out, stderr := runCLI(t, env, "servers", "--root", img); code != 0 {
		t.Errorf("servers --root beside an env file others may read: exit %d\n%s%s", code, out, stderr)
	}
}
