package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --root reads and writes an image as if its folder were /: init writes
// the image's registry naming the image's demo server; a command present
// only in the image is found, one present only on the build host is
// reported missing, a link that escapes the image stays inside it, ${NAME}
// is reported as set at run time; nothing is written outside the folder;
// --probe and a missing folder are usage errors.
func TestRootImage(t *testing.T) {
	t.Parallel()
	img := t.TempDir()
	home := t.TempDir() // the build host's HOME: nothing may land there
	for _, d := range []string{"usr/local/bin", "usr/local/libexec/colibri-mcp", "srv/data"} {
		os.MkdirAll(filepath.Join(img, d), 0o755)
	}
	copyFile(t, demoBin, filepath.Join(img, "usr/local/libexec/colibri-mcp/demo-mcp-server"), 0o755)
	os.WriteFile(filepath.Join(img, "usr/local/bin/only-in-image"), []byte("#!/bin/sh\n"), 0o755)
	// An absolute link and one climbing out: both are read inside the image,
	// where neither target exists (the build host has /bin/sh).
	os.Symlink("/bin/sh", filepath.Join(img, "usr/local/bin/abs-escape"))
	os.Symlink("../../../../../../../bin/sh", filepath.Join(img, "usr/local/bin/up-escape"))
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "COLIBRI_MCP_EXTERNAL_CONFIG="}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, env, args...)
	}
	code, out, stderr := cli("init", "--root", img)
	if code != 0 || !strings.Contains(out, "wrote "+registryDefaultPath()) || !strings.Contains(out, imageDemo) {
		t.Fatalf("init --root: exit %d\n%s%s", code, out, stderr)
	}
	b, err := os.ReadFile(filepath.Join(img, registryDefaultPath()))
	if err != nil || !strings.Contains(string(b), `"`+imageDemo+`"`) || strings.Contains(string(b), demoBin) {
		t.Fatalf("the image's registry: %v\n%s", err, b)
	}
	for _, add := range [][]string{
		{"imgonly", "--", "only-in-image"},
		{"hostonly", "--", "sh"},
		{"abs", "--", "/usr/local/bin/abs-escape"},
		{"up", "--", "/usr/local/bin/up-escape"},
		{"secret", "--env", "TOKEN=${IMAGE_TOKEN}", "--", "only-in-image"},
	} {
		if code, out, stderr := cli(append([]string{"add", "--root", img}, add...)...); code != 0 || !strings.Contains(out, "to "+registryDefaultPath()) {
			t.Fatalf("add --root %v: exit %d\n%s%s", add, code, out, stderr)
		}
	}
	code, out, stderr = cli("check", "--root", img, "--json")
	var res struct {
		OK      bool   `json:"ok"`
		Path    string `json:"config_path"`
		Servers []struct {
			Server  string   `json:"server"`
			OK      bool     `json:"ok"`
			RunTime []string `json:"set_at_run_time"`
			Error   *struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 1 || res.OK || res.Path != registryDefaultPath() {
		t.Fatalf("check --root: exit %d %v\n%s%s", code, err, out, stderr)
	}
	for _, s := range res.Servers {
		wantOK := s.Server == "demo" || s.Server == "imgonly" || s.Server == "secret"
		if s.OK != wantOK {
			t.Errorf("%s: ok=%v, want %v (%+v)", s.Server, s.OK, wantOK, s.Error)
		}
		if s.Server == "hostonly" && (s.Error == nil || !strings.Contains(s.Error.Message, `"sh" is not on the image's PATH`)) {
			t.Errorf("hostonly: %+v", s.Error)
		}
		if s.Server == "secret" && strings.Join(s.RunTime, ",") != "IMAGE_TOKEN" {
			t.Errorf("secret: set at run time %v", s.RunTime)
		}
	}
	if code, out, _ := cli("check", "--root", img); code != 1 || !strings.Contains(out, "${IMAGE_TOKEN}: set where the image runs") {
		t.Errorf("check --root's text: exit %d\n%s", code, out)
	}
	if code, out, stderr := cli("servers", "--root", img, "--json"); code != 0 || !strings.Contains(out, `"config_path": "`+registryDefaultPath()+`"`) || !strings.Contains(out, "imgonly") {
		t.Errorf("servers --root: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := cli("remove", "--root", img, "hostonly"); code != 0 || !strings.Contains(out, "from "+registryDefaultPath()) {
		t.Errorf("remove --root: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := cli("check", "--root", img, "--probe"); code != 2 || !strings.Contains(stderr, "--probe with --root") {
		t.Errorf("check --root --probe: exit %d %s", code, stderr)
	}
	if code, _, stderr := cli("check", "--root", filepath.Join(img, "missing")); code != 2 || !strings.Contains(stderr, "not a folder") {
		t.Errorf("check --root missing: exit %d %s", code, stderr)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("--root wrote on the build host: %v", entries)
	}
}

func registryDefaultPath() string { return "/usr/local/etc/colibri/external-mcp.json" }
