package colibri_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const port = "ports/sysutils/colibri-mcp"

// files/colibri_mcp.in is rc.d/colibri_mcp with /usr/local as %%PREFIX%%
// (make port-files writes it): the port and `make install` start the same
// service.
func TestPortRCScriptInStep(t *testing.T) {
	rcd, err := os.ReadFile("rc.d/colibri_mcp")
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.ReadFile(filepath.Join(port, "files/colibri_mcp.in"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.ReplaceAll(string(rcd), "/usr/local", "%%PREFIX%%"); string(in) != want {
		t.Errorf("%s/files/colibri_mcp.in is not rc.d/colibri_mcp with %%%%PREFIX%%%%: run 'make port-files'", port)
	}
}

// The port's Makefile has what the ports framework needs, in portlint's
// layout (NAME=<tab>value).
func TestPortMakefile(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(port, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"USES=\t\tgmake go:modules\n", "GO_MODULE=\tgithub.com/colibri-mcp/colibri-mcp\n",
		"USE_RC_SUBR=\tcolibri_mcp\n", "SUB_FILES=\tpkg-message\n", "USERS=\t\tcolibri\n", "GROUPS=\t\tcolibri\n",
		"LICENSE=\tBSD2CLAUSE\n", ".include <bsd.port.mk>\n"} {
		if !strings.Contains(string(mk), want) {
			t.Errorf("the port's Makefile lacks %q", want)
		}
	}
	assign := regexp.MustCompile(`^([A-Z_]+)([+?:]?=)(.*)$`)
	for i, l := range strings.Split(string(mk), "\n") {
		if m := assign.FindStringSubmatch(l); m != nil && !strings.HasPrefix(m[3], "\t") {
			t.Errorf("Makefile:%d: %s%s: portlint wants a tab after the operator", i+1, m[1], m[2])
		}
	}
	for _, f := range []string{"pkg-descr", "pkg-plist", "files/pkg-message.in"} {
		if _, err := os.Stat(filepath.Join(port, f)); err != nil {
			t.Error(err)
		}
	}
}

// pkg-plist lists exactly what `make install` installs, less the rc.d script
// (USE_RC_SUBR adds it), with the man page compressed as the ports framework
// does, the sample as @sample and the documents under %%PORTDOCS%%.
func TestPortPlistMatchesInstall(t *testing.T) {
	bin, dest := t.TempDir(), t.TempDir()
	for _, f := range []string{"colibri-mcp", "demo-mcp-server"} {
		os.WriteFile(filepath.Join(bin, f), []byte("#!/bin/sh\n"), 0o755)
	}
	out, err := exec.Command("make", "-s", "install", "DESTDIR="+dest, "PREFIX=/usr/local", "BIN="+bin).CombinedOutput()
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	root := filepath.Join(dest, "usr/local")
	var installed []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			switch {
			case rel == "etc/rc.d/colibri_mcp":
				return nil
			case strings.HasSuffix(rel, ".sample"):
				rel = "@sample " + rel
			case strings.HasPrefix(rel, "share/man/"):
				rel += ".gz"
			case strings.HasPrefix(rel, "share/doc/colibri-mcp/"):
				rel = "%%PORTDOCS%%%%DOCSDIR%%/" + strings.TrimPrefix(rel, "share/doc/colibri-mcp/")
			}
			installed = append(installed, rel)
		}
		return nil
	})
	plist, err := os.ReadFile(filepath.Join(port, "pkg-plist"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, l := range strings.Split(strings.TrimSpace(string(plist)), "\n") {
		if !strings.HasPrefix(l, "@dir") { // folders pkg makes, not files make install writes
			listed = append(listed, l)
		}
	}
	// The service's state folder (docs/freebsd.md), the run-as user's alone.
	if !strings.Contains(string(plist), "@dir(colibri,colibri,0700) /var/db/colibri\n") {
		t.Error("pkg-plist does not make /var/db/colibri, 0700 and owned by colibri")
	}
	slices.Sort(installed)
	slices.Sort(listed)
	if !slices.Equal(installed, listed) {
		t.Errorf("pkg-plist lists\n  %s\nmake install installs\n  %s", strings.Join(listed, "\n  "), strings.Join(installed, "\n  "))
	}
}
