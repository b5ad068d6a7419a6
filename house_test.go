package colibri_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The house (docs/architecture.md): packages are concepts with real fan-in,
// a file is one concern, a seam has named parts, and the repository stands
// alone. Each rule names what breaks it.
func TestHouse(t *testing.T) {
	t.Run("no small package with a single importer", testNoLonePackage)
	t.Run("no file over 800 lines", testNoLongFile)
	t.Run("no interface over 10 methods", testNoWideInterface)
	t.Run("no reference to a file the repository does not hold", testStandsAlone)
}

// goFiles are the repository's Go files, node_modules, testdata and hidden
// folders left out.
func goFiles(t *testing.T, tests bool) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".go") && (tests || !strings.HasSuffix(path, "_test.go")) {
			out = append(out, path)
		}
		return nil
	})
	return out
}

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// A library package of under 100 lines that one package alone imports is
// a file of that package (docs/architecture.md, "Packages are concepts").
// Main packages and the packages of tests alone (testOnly) are no library.
func testNoLonePackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{.Name}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	importers := map[string][]string{}
	var libraries []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, _ := strings.CutPrefix(f[0], module)
		if f[1] != "main" && !testOnly[pkg] && f[0]+"/" != module {
			libraries = append(libraries, pkg)
		}
		for _, imp := range f[2:] {
			if dep, ok := strings.CutPrefix(imp, module); ok {
				importers[dep] = append(importers[dep], pkg)
			}
		}
	}
	for _, pkg := range libraries {
		if len(importers[pkg]) != 1 {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(pkg, "*.go"))
		n := 0
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				n += lines(t, f)
			}
		}
		if n < 100 {
			t.Errorf("%s: %d lines, imported by %s alone: make it a file of %s", pkg, n, importers[pkg][0], importers[pkg][0])
		}
	}
}

// Over 800 lines a file holds two concerns.
func testNoLongFile(t *testing.T) {
	for _, f := range goFiles(t, false) {
		if n := lines(t, f); n > 800 {
			t.Errorf("%s: %d lines: split it by concern (at most 800)", f, n)
		}
	}
}

// An interface of more than ten methods is a seam without named parts:
// compose it of named interfaces, as session.Upstream is. Methods an
// interface embeds count in the embedded one.
func testNoWideInterface(t *testing.T) {
	fset := token.NewFileSet()
	for _, path := range goFiles(t, false) {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parsing %s: %v", path, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			it, ok := spec.Type.(*ast.InterfaceType)
			if !ok {
				return true
			}
			methods := 0
			for _, m := range it.Methods.List {
				if _, ok := m.Type.(*ast.FuncType); ok {
					methods += len(m.Names)
				}
			}
			if methods > 10 {
				t.Errorf("%s: interface %s has %d methods: compose it of named parts of at most 10", fset.Position(spec.Pos()), spec.Name.Name, methods)
			}
			return true
		})
	}
}

// Nothing in the repository cites a file a clone does not hold: the
// project's working notes are not part of it; docs/ says what they said.
func testStandsAlone(t *testing.T) {
	notes := []string{"CONTRACT" + ".md", "STYLE" + ".md"}
	filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		for _, note := range notes {
			if d.Name() == note {
				t.Errorf("%s: the repository holds a working note", path)
			}
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
			return nil
		}
		if bytes.IndexByte(b, 0) >= 0 {
			return nil // a binary (a build's output): not the repository's text
		}
		for _, note := range notes {
			if bytes.Contains(b, []byte(note)) {
				t.Errorf("%s names %s, which a clone does not hold: cite the docs/ page that says the same", path, note)
			}
		}
		return nil
	})
}
