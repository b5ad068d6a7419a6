package editorconf

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestSamples")

// secret is the literal every sample file hides in its env, headers or
// tokens: it must never come out of Parse.
const secret = "sk-IMPORT-SECRET-123"

// samples are one file per editor, with the format Detect must find.
var samples = []struct {
	file   string
	format Format
}{
	{"claude_desktop_config.json", Claude},
	{"project/.cursor/mcp.json", Cursor},
	{"project/.vscode/mcp.json", VSCode},
	{"zed_settings.json", Zed},
	{"codex_config.toml", Codex},
}

// render is everything Parse tells a user: the registry document, the
// secrets moved and the notes.
func render(res *Result) string {
	var b strings.Builder
	b.Write(Document(res.Entries))
	for _, m := range res.Moved {
		b.WriteString(m.String() + " [" + m.From + "]\n")
	}
	for _, n := range res.Notes {
		b.WriteString("note: " + n.String() + "\n")
	}
	return b.String()
}

// Each editor's sample becomes the registry entries in its golden file
// (testdata/*.golden; go test -update rewrites them), and the secret it
// holds appears nowhere in what Parse returns.
func TestSamples(t *testing.T) {
	for _, s := range samples {
		t.Run(string(s.format), func(t *testing.T) {
			path := filepath.Join("testdata", s.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), secret) {
				t.Fatalf("%s does not hold the secret %s: the test would prove nothing", path, secret)
			}
			f, err := Detect(data, path)
			if err != nil || f != s.format {
				t.Fatalf("Detect = %q, %v; want %q", f, err, s.format)
			}
			opts := Options{Home: "/home/me"}
			if WorkspaceOf(path) != "" {
				opts.Workspace = "/home/me/project"
			}
			res, err := Parse(data, f, opts)
			if err != nil {
				t.Fatal(err)
			}
			got := render(res)
			if strings.Contains(got, secret) {
				t.Errorf("the secret came out of Parse:\n%s", got)
			}
			golden := filepath.Join("testdata", string(s.format)+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if got != string(want) {
				t.Errorf("Parse(%s) =\n%s\nwant (%s):\n%s", path, got, golden, want)
			}
		})
	}
}
