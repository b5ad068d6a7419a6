package answer

import "testing"

// What callers over HTTP read names a file by its last element, never a
// folder of the machine colibri runs on; a URL's path is left alone.
func TestWithoutFolders(t *testing.T) {
	for in, want := range map[string]string{
		`spawn: exec: "/usr/local/bin/srv": no such file`: `spawn: exec: "srv": no such file`,
		`cwd /var/db/x is not a directory`:                `cwd x is not a directory`,
		`/etc/colibri/external-mcp.json: bad`:             `external-mcp.json: bad`,
		`reaching https://example.com/mcp/v1 failed`:      `reaching https://example.com/mcp/v1 failed`,
		`path=/a/b,other=/c/d`:                            `path=b,other=d`,
	} {
		if got := WithoutFolders(in); got != want {
			t.Errorf("WithoutFolders(%q) = %q, want %q", in, got, want)
		}
	}
}
