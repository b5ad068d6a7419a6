package regfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// add and remove splice the text: every other entry's bytes (layout, key
// order, odd spacing) stay as they were.
func TestAddRemoveKeepOtherEntries(t *testing.T) {
	doc := []byte("{\n  \"policy\": {\"deny_destructive\": true},\n  \"servers\": {\n    \"a\": {\"command\": \"/bin/a\",   \"args\": [\"x\"]},\n    \"b\": {\n      \"command\": \"/bin/b\"\n    }\n  }\n}\n")
	out, err := AddServer(doc, "c", []byte(`{"command":"/bin/c"}`), false)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"policy\": {\"deny_destructive\": true},\n  \"servers\": {\n    \"a\": {\"command\": \"/bin/a\",   \"args\": [\"x\"]},\n    \"b\": {\n      \"command\": \"/bin/b\"\n    },\n    \"c\": {\n      \"command\": \"/bin/c\"\n    }\n  }\n}\n"
	if string(out) != want {
		t.Fatalf("AddServer =\n%s\nwant\n%s", out, want)
	}
	if _, err := registry.Parse(bytes.NewReader(out), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := AddServer(out, "a", []byte(`{"command":"/bin/z"}`), false); !errors.Is(err, ErrExists) {
		t.Errorf("AddServer of an existing name: %v", err)
	}
	rep, err := AddServer(out, "a", []byte(`{"command":"/bin/z"}`), true)
	if err != nil || !strings.Contains(string(rep), "\"a\": {\n      \"command\": \"/bin/z\"\n    },\n    \"b\": {\n      \"command\": \"/bin/b\"") {
		t.Fatalf("AddServer --replace =\n%s (%v)", rep, err)
	}
	for _, name := range []string{"a", "b", "c"} {
		rm, err := RemoveServer(out, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := registry.Parse(bytes.NewReader(rm), ""); err != nil || strings.Contains(string(rm), `"`+name+`"`) {
			t.Errorf("RemoveServer(%s) =\n%s (%v)", name, rm, err)
		}
		if !strings.Contains(string(rm), `"policy": {"deny_destructive": true}`) {
			t.Errorf("RemoveServer(%s) changed another member", name)
		}
	}
	var ue *UnknownServerError
	if _, err := RemoveServer(out, "bb"); !errors.As(err, &ue) || ue.Closest != "b" {
		t.Errorf("RemoveServer of an unknown name: %v", err)
	}
	// No registry, and one without "servers".
	for _, start := range []string{"", "{}", "{\"policy\": {}}"} {
		got, err := AddServer([]byte(start), "n", []byte(`{"command":"/bin/n"}`), false)
		if err != nil {
			t.Fatal(err)
		}
		if reg, err := registry.Parse(bytes.NewReader(got), ""); err != nil || reg.Servers["n"] == nil {
			t.Errorf("AddServer on %q =\n%s (%v)", start, got, err)
		}
	}
}

// Two edits of one registry at once (two add processes): the second waits
// for the first and builds on what it wrote. Without the lock, the second
// read the file before the first replaced it, and failed ErrChanged, or,
// had it passed Replace's check just before the first's rename, lost the
// first's server.
func TestEditWaitsForAnotherEdit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "external-mcp.json")
	if err := os.WriteFile(path, []byte("{\"servers\": {}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	add := func(name string) func([]byte) ([]byte, error) {
		return func(old []byte) ([]byte, error) {
			return AddServer(old, name, json.RawMessage(`{"command": "/bin/true"}`), false)
		}
	}
	secondRead := make(chan struct{}, 1)
	secondDone := make(chan error, 1)
	_, err := Edit(path, func(old []byte) ([]byte, error) {
		go func() {
			_, err := Edit(path, func(old []byte) ([]byte, error) {
				secondRead <- struct{}{}
				return add("b")(old)
			})
			secondDone <- err
		}()
		// The second must not read the file while this edit holds it: give
		// it the time to, were it not held.
		select {
		case <-secondRead:
			t.Error("a second edit read the registry while the first was changing it")
		case <-time.After(300 * time.Millisecond):
		}
		return add("a")(old)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-secondDone; err != nil {
		t.Fatalf("the second edit: %v", err)
	}
	reg, err := registry.Load(path)
	if err != nil || reg.Servers["a"] == nil || reg.Servers["b"] == nil {
		t.Fatalf("registry after both edits: %v (%v), want a and b", reg, err)
	}
}

// NewEntry builds add's entry, or says which argument is wrong without
// repeating a value that may be a token.
func TestNewEntry(t *testing.T) {
	name, e, err := NewEntry(AddArgs{Args: []string{"gh", "gh-mcp", "stdio"}, Env: []string{"NO_PROXY=a,b", "T=${GH}"}, Persistent: true})
	if err != nil || name != "gh" || e.Command != "gh-mcp" || len(e.Args) != 1 || e.Env["NO_PROXY"] != "a,b" || e.Lifecycle != registry.Persistent {
		t.Errorf("NewEntry = %q, %+v, %v", name, e, err)
	}
	_, e, err = NewEntry(AddArgs{Args: []string{"docs"}, URL: "https://x/mcp", BearerTokenEnv: "DOCS_TOKEN"})
	if err != nil || e.BearerToken != "${DOCS_TOKEN}" || e.Command != "" {
		t.Errorf("remote: %+v, %v", e, err)
	}
	for _, tc := range []struct {
		a    AddArgs
		says string
	}{
		{AddArgs{}, "needs NAME"},
		{AddArgs{Args: []string{"d"}, URL: "https://x", BearerTokenEnv: "ghp_abc123"}, "not the token"},
		{AddArgs{Args: []string{"d", "/bin/x"}, URL: "https://x"}, "not both"},
		{AddArgs{Args: []string{"d", "/bin/x"}, Env: []string{"NOEQUALS"}}, `--env "NOEQUALS": want K=V`},
		{AddArgs{Args: []string{"d", "/bin/x"}, Headers: []string{"A=b"}}, "are for --url"},
		{AddArgs{Args: []string{"d"}}, "give the server's command"},
	} {
		if _, _, err := NewEntry(tc.a); err == nil || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "ghp_abc123") {
			t.Errorf("NewEntry(%+v) = %v, want %q", tc.a, err, tc.says)
		}
	}
}

// init's demo entry runs what the installed sample registry's does, by the
// pins' measure (the entry's fingerprint): README's first command checks
// the sample, which pins "demo"; init then writes its own "demo", and a
// difference made every later check warn "the registry entry changed since
// its pins were made (env): an upgrade?" for a user who changed nothing
// (the first-hour trial: the sample's env DEMO_MODE, which the demo server
// never read).
func TestStarterDemoIsTheSamplesDemo(t *testing.T) {
	const demo = "/usr/local/libexec/colibri-mcp/demo-mcp-server"
	sample, err := os.ReadFile("../../examples/external-mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	// What make install writes: the sample naming the installed demo server.
	sample = bytes.ReplaceAll(sample, []byte(`"../bin/demo-mcp-server"`), []byte(`"`+demo+`"`))
	sample = bytes.ReplaceAll(sample, []byte(`"../docs/registry.schema.json"`), []byte(`"/usr/local/share/doc/colibri-mcp/registry.schema.json"`))
	starter, err := Starter(demo)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var fps []*registry.EntryFingerprint
	for _, doc := range [][]byte{sample, starter} {
		p := filepath.Join(dir, "external-mcp.json")
		if err := os.WriteFile(p, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		reg, err := registry.Load(p)
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if reg.Servers["demo"] == nil {
			t.Fatalf("no demo server in\n%s", doc)
		}
		fps = append(fps, reg.Servers["demo"].Fingerprint())
	}
	if fps[0].Digest != fps[1].Digest {
		t.Errorf("the sample's demo and init's differ: %v against %v", fps[0].Fields, fps[1].Fields)
	}
}

// The pass_env hint names the settings the runner's own package manager
// reads: npm's for npx, uv's for uvx (the first-hour trial found
// NODE_EXTRA_CA_CERTS and npm_config_* suggested for uvx); a persistent
// entry, which cannot have spares, is not told to keep one.
func TestHintsFitTheRunner(t *testing.T) {
	npx, uvx := PassEnvHint("npx"), PassEnvHint("/usr/bin/uvx")
	if !strings.Contains(npx, `"npm_config_*"`) || !strings.Contains(npx, `"NODE_EXTRA_CA_CERTS"`) {
		t.Errorf("npx: %s", npx)
	}
	if !strings.Contains(uvx, `"UV_*"`) || strings.Contains(uvx, "npm") || strings.Contains(uvx, "NODE_") {
		t.Errorf("uvx: %s", uvx)
	}
	if h := PassEnvHint("node"); h != "" {
		t.Errorf("node: %s", h)
	}
	for _, h := range HintsFor(&Entry{Command: "uvx", Lifecycle: registry.Persistent}) {
		if strings.Contains(h, `"spare"`) {
			t.Errorf("a persistent entry is told to keep a spare: %s", h)
		}
	}
	if hs := HintsFor(&Entry{Command: "npx"}); len(hs) != 2 || !strings.HasSuffix(hs[1], "(add --pass-env NAME for each)") {
		t.Errorf("npx's hints: %q", hs)
	}
}
