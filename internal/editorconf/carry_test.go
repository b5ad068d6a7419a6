package editorconf

import (
	"encoding/json"
	"strings"
	"testing"
)

func allNotes(res *Result) string {
	var b strings.Builder
	for _, n := range res.Notes {
		b.WriteString(n.String() + "\n")
	}
	return b.String()
}

// VS Code's per-server sandbox becomes colibri's: allowWrite as write,
// allowUnixSockets as unix, allowedDomains as net's list where the
// registry takes one; every key without a counterpart is named.
func TestVSCodeSandbox(t *testing.T) {
	file := `{
  "servers": {
    "playwright": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@playwright/mcp@0.0.41"],
      "sandboxEnabled": true,
      "sandbox": {
        "filesystem": {"allowWrite": ["${workspaceFolder}", "/tmp/pw"], "denyRead": ["~/.ssh"]},
        "network": {"allowedDomains": ["api.example.com", "*.cdn.example.com"], "deniedDomains": ["evil.example.com"], "allowUnixSockets": ["/run/pw.sock"], "allowLocalBinding": true},
        "extra": 1
      }
    },
    "offline": {"type": "stdio", "command": "offline-mcp", "sandboxEnabled": true},
    "off": {"type": "stdio", "command": "off-mcp", "sandboxEnabled": false, "sandbox": {"filesystem": {"allowWrite": ["/x"]}}}
  }
}`
	for _, list := range []bool{true, false} {
		res, err := Parse([]byte(file), VSCode, Options{Workspace: "/home/me/proj", NetList: list})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range res.Entries {
			b, _ := json.Marshal(e)
			got[e.Name] = string(b)
		}
		wantNet := `"net":["api.example.com","*.cdn.example.com"]`
		if !list {
			wantNet = `"net":false`
		}
		if want := `"sandbox":{"write":["/home/me/proj","/tmp/pw"],` + wantNet + `,"unix":["/run/pw.sock"]}`; !strings.Contains(got["playwright"], want) {
			t.Errorf("NetList %v: playwright = %s\nwant it to hold %s", list, got["playwright"], want)
		}
		if !strings.Contains(got["offline"], `"sandbox":{"net":false}`) {
			t.Errorf("offline = %s: want no writes and no network", got["offline"])
		}
		if strings.Contains(got["off"], "sandbox") {
			t.Errorf("off = %s: a sandbox VS Code does not apply was imported", got["off"])
		}
		n := allNotes(res)
		for _, want := range []string{"sandbox.filesystem.denyRead not carried over", "sandbox.network.deniedDomains not carried over",
			"sandbox.network.allowLocalBinding not carried over", "sandbox.extra not carried over", `server "off": "sandbox" not imported: "sandboxEnabled" is not true`,
			"read only the system's files"} {
			if !strings.Contains(n, want) {
				t.Errorf("NetList %v: notes do not say %q:\n%s", list, want, n)
			}
		}
		if list == strings.Contains(n, "allowedDomains (api.example.com, *.cdn.example.com) not carried over") {
			t.Errorf("NetList %v: notes on allowedDomains:\n%s", list, n)
		}
	}
}

// Claude Code's oauth keys become the authorization_code grant; the keys
// colibri has no counterpart for are named.
func TestClaudeCodeOAuth(t *testing.T) {
	file := `{"mcpServers": {
  "linear": {"type": "http", "url": "https://mcp.linear.app/mcp",
    "oauth": {"clientId": "abc123", "scopes": "read write", "callbackPort": 8080, "authServerMetadataUrl": "https://auth.linear.app/.well-known/oauth-authorization-server"}},
  "local": {"command": "x-mcp", "oauth": {"clientId": "z"}}
}}`
	res, err := Parse([]byte(file), Claude, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var linear string
	for _, e := range res.Entries {
		if e.Name == "linear" {
			b, _ := json.Marshal(e)
			linear = string(b)
		}
	}
	if want := `"oauth":{"grant":"authorization_code","client_id":"abc123","scopes":["read","write"]}`; !strings.Contains(linear, want) {
		t.Errorf("linear = %s\nwant %s", linear, want)
	}
	n := allNotes(res)
	for _, want := range []string{`server "linear": oauth.callbackPort not carried over`, `server "linear": oauth.authServerMetadataUrl not carried over`,
		"colibri-mcp auth login linear", `server "local": oauth not imported: it goes with a url`} {
		if !strings.Contains(n, want) {
			t.Errorf("notes do not say %q:\n%s", want, n)
		}
	}
	if strings.Contains(n, `key "oauth" not imported`) {
		t.Errorf("oauth is a leftover too:\n%s", n)
	}
}
