package termview

import (
	"strings"
	"testing"
)

// add and init say what they wrote, what they kept, and what to run next.
func TestEditLines(t *testing.T) {
	var b strings.Builder
	Added(&b, "fs", "/r.json", "/r.json.bak", false, []string{"npx fetches the package on each start"})
	Added(&b, "gh", "/r.json", "", false, nil)
	Added(&b, "gh", "/r.json", "/r.json.bak", true, nil)
	want := "added \"fs\" to /r.json\nthe previous registry is kept as /r.json.bak\nhint: npx fetches the package on each start\ntry: colibri-mcp list-tools fs\n" +
		"added \"gh\" to /r.json\ntry: colibri-mcp list-tools gh\n" +
		"replaced \"gh\" in /r.json\nthe previous registry is kept as /r.json.bak\ntry: colibri-mcp list-tools gh\n"
	if b.String() != want {
		t.Errorf("add: got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	Initialized(&b, "/r.json", "/r.json.bak", "/usr/local/bin/colibri-demo")
	Initialized(&b, "/r.json", "", "")
	add := "add servers with 'colibri-mcp add NAME -- COMMAND [ARGS…]', or 'colibri-mcp import --from EDITOR --write'\n\n"
	want = "wrote /r.json\nthe previous registry is kept as /r.json.bak\nit holds the demo server (/usr/local/bin/colibri-demo): try 'colibri-mcp list-tools demo'\n" + add +
		"wrote /r.json\n" + add
	if b.String() != want {
		t.Errorf("init: got\n%s\nwant\n%s", b.String(), want)
	}
}
