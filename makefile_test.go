package colibri_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// `make unit` runs the big-input bound tests (the Makefile's HEAVY_TESTS)
// without -race, in a second pass over HEAVY_PKGS, and skips them in the
// race pass: a test named there must be defined in one of those packages,
// or it would run in neither pass (moved to another package) and nothing
// would say so.
func TestHeavyTestsRunInMakeUnit(t *testing.T) {
	b, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	mk := string(b)
	value := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `\s*:=\s*(.+)$`).FindStringSubmatch(mk)
		if m == nil {
			t.Fatalf("the Makefile sets no %s", name)
		}
		return strings.TrimSpace(m[1])
	}
	names := strings.Split(value("HEAVY_TESTS"), "|")
	pkgs := strings.Fields(value("HEAVY_PKGS"))
	for _, want := range []string{
		`-race -count=1 -parallel 4 -p 4 -skip '^($(HEAVY_TESTS))$$' ./...`,
		`-run '^($(HEAVY_TESTS))$$' $(HEAVY_PKGS)`,
	} {
		if !strings.Contains(mk, want) {
			t.Errorf("the unit target lacks %s", want)
		}
	}
	defined := map[string][]string{} // test → packages defining it
	for _, pkg := range pkgs {
		files, _ := filepath.Glob(filepath.Join(pkg, "*_test.go"))
		if len(files) == 0 {
			t.Errorf("HEAVY_PKGS names %s, which has no tests", pkg)
		}
		for _, f := range files {
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
					defined[fn.Name.Name] = append(defined[fn.Name.Name], pkg)
				}
			}
		}
	}
	for _, n := range names {
		if len(defined[n]) == 0 {
			t.Errorf("HEAVY_TESTS names %s, which no package of HEAVY_PKGS (%s) defines: it would run in neither pass of make unit", n, strings.Join(pkgs, " "))
		}
	}
}
