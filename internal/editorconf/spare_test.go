package editorconf

import (
	"strings"
	"testing"
)

// import suggests "spare": 1 for the slow starters only.
func TestSpareHint(t *testing.T) {
	for _, tc := range []struct {
		e    Entry
		want bool
	}{
		{Entry{Command: "npx"}, true},
		{Entry{Command: "/usr/local/bin/uvx"}, true},
		{Entry{Command: "node"}, true},
		{Entry{Command: "python3.12"}, true},
		{Entry{Command: "python"}, true},
		{Entry{Command: "/usr/local/bin/demo-mcp-server"}, false},
		{Entry{Command: "nodemon"}, false},
		{Entry{URL: "https://example.com/mcp"}, false},
	} {
		got := SpareHint(&tc.e)
		if (got != "") != tc.want {
			t.Errorf("SpareHint(%+v) = %q, want a hint: %t", tc.e, got, tc.want)
		}
		if got != "" && !strings.Contains(got, `"spare": 1`) {
			t.Errorf("hint %q does not name the key", got)
		}
	}
}
