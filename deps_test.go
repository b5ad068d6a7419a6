// Package colibri_test holds repository-wide checks.
package colibri_test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/colibri-mcp/colibri-mcp/"

// The one-way imports of STYLE.md: cmd/colibri-mcp → internal/httpserve →
// tools → host → {jail, registry}. Each package lists what it must never import (prefixes).
var forbidden = map[string][]string{
	"registry": {"os/exec", module + "host", module + "jail", module + "tools", module + "cmd",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	"jail": {module + "registry", module + "host", module + "tools", module + "cmd",
		"github.com/modelcontextprotocol/go-sdk", "github.com/urfave/cli"},
	"host":  {module + "tools", module + "cmd", "github.com/urfave/cli"},
	"tools": {"os/exec", module + "jail", module + "cmd", "github.com/urfave/cli"},
	// The faces: cmd/colibri-mcp → internal/httpserve → tools; stdioserve
	// knows only go-sdk.
	"internal/httpserve": {"os/exec", module + "cmd", module + "host", module + "jail", module + "registry", "github.com/urfave/cli"},
	"internal/stdioserve": {"os/exec", module + "cmd", module + "host", module + "jail", module + "registry", module + "tools",
		"github.com/urfave/cli"},
}

// Calls library packages must never make.
var forbiddenCalls = []string{"os.Exit(", "slog.SetDefault(", "log.Fatal", "signal.NotifyContext("}

func TestImportRules(t *testing.T) {
	for pkg, bad := range forbidden {
		files, _ := filepath.Glob(filepath.Join(pkg, "*.go"))
		if len(files) == 0 {
			t.Errorf("package %s has no Go files", pkg)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			for _, imp := range imports(t, file) {
				if imp == "testing" {
					t.Errorf("%s imports testing: production code must not", file)
				}
				for _, b := range bad {
					if imp == b || strings.HasPrefix(imp, b+"/") || strings.HasPrefix(imp, b) && !strings.HasPrefix(b, module) {
						t.Errorf("%s imports %s: %s must never import it (STYLE.md, the house)", file, imp, pkg)
					}
				}
			}
			src, _ := os.ReadFile(file)
			for _, call := range forbiddenCalls {
				if strings.Contains(string(src), call) {
					t.Errorf("%s calls %s: only main may", file, strings.TrimSuffix(call, "("))
				}
			}
		}
	}
}

func TestNothingImportsCmd(t *testing.T) {
	filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		for _, imp := range imports(t, path) {
			if strings.HasPrefix(imp, module+"cmd") {
				t.Errorf("%s imports %s: nothing imports cmd/", path, imp)
			}
		}
		return nil
	})
}

func imports(t *testing.T, file string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("parsing %s: %v", file, err)
	}
	var out []string
	for _, s := range f.Imports {
		p, _ := strconv.Unquote(s.Path.Value)
		out = append(out, p)
	}
	return out
}

// make install puts each file in FreeBSD's place under DESTDIR and PREFIX.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	dest := t.TempDir()
	cmd := exec.Command("make", "install", "DESTDIR="+dest, "PREFIX=/usr/local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for path, mode := range map[string]os.FileMode{
		"usr/local/bin/colibri-mcp":                            0o755,
		"usr/local/etc/rc.d/colibri_mcp":                       0o555,
		"usr/local/etc/colibri/external-mcp.json.sample":       0o644,
		"usr/local/share/doc/colibri-mcp/registry.md":          0o644,
		"usr/local/share/doc/colibri-mcp/freebsd.md":           0o644,
		"usr/local/share/doc/colibri-mcp/registry.schema.json": 0o644,
		"usr/local/share/doc/colibri-mcp/README.md":            0o644,
	} {
		st, err := os.Stat(filepath.Join(dest, path))
		if err != nil {
			t.Errorf("not installed: %s", path)
			continue
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), mode)
		}
	}
}
