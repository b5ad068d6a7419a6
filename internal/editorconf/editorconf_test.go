package editorconf

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf/syntax"

	"github.com/colibri-mcp/colibri-mcp/internal/varref"
)

// A JSON mistake is reported at its line and column of the original file
// (comments included), quoting at most the one character found.
func TestJSONErrorLocation(t *testing.T) {
	for _, tc := range []struct {
		in        string
		line, col int
	}{
		{"{\n  // a comment\n  \"mcpServers\": {\n    \"x\": {\"command\": sk-IMPORT-SECRET-123}\n  }\n}", 4, 22},
		{"{\"mcpServers\": {}} {}", 1, 20},
		{"{\n\"mcpServers\": {\n", 0, 0}, // cut short: no location, the file ends
	} {
		_, err := Parse([]byte(tc.in), Claude, Options{})
		var e *Error
		if !errors.As(err, &e) || e.Line != tc.line || e.Column != tc.col {
			t.Errorf("%q: %v (%+v), want line %d, column %d", tc.in, err, e, tc.line, tc.col)
			continue
		}
		if strings.Contains(err.Error(), "IMPORT") {
			t.Errorf("%q: the error quotes the file: %v", tc.in, err)
		}
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name, file, in string
		want           Format
		says           string // a *DetectError's reason, when want is ""
	}{
		{"mcpServers", "claude_desktop_config.json", `{"mcpServers": {}}`, Claude, ""},
		{"mcpServers in .cursor", "/p/.cursor/mcp.json", `{"mcpServers": {}}`, Cursor, ""},
		{"typed servers", "mcp.json", `{"servers": {"a": {"type": "stdio", "command": "x"}}}`, VSCode, ""},
		{"inputs", "mcp.json", `{"inputs": [], "servers": {"a": {"command": "x"}}}`, VSCode, ""},
		{"settings.json mcp", "settings.json", `{"mcp": {"servers": {}}}`, VSCode, ""},
		{"zed", "settings.json", "// zed\n{\"context_servers\": {},}", Zed, ""},
		{"toml by name", "config.toml", `model = "o3"`, Codex, ""},
		{"toml by content", "config", "[mcp_servers.a]\ncommand = \"x\"\n", Codex, ""},
		{"untyped servers", "x.json", `{"servers": {"a": {"command": "x"}}}`, "", `"servers" entries have no "type"`},
		{"two shapes", "x.json", `{"mcpServers": {}, "context_servers": {}}`, "", `"mcpServers" and "context_servers"`},
		{"nothing", "x.json", `{"theme": "dark"}`, "", `none of "mcpServers"`},
		{"a list", "x.json", `[]`, "", "a list, not a JSON object"},
		{"toml without servers", "config", "model = \"o3\"\n", "", ""}, // neither JSON nor Codex's: the JSON error
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Detect([]byte(tc.in), tc.file)
			if got != tc.want {
				t.Errorf("Detect = %q, %v; want %q", got, err, tc.want)
			}
			if tc.want != "" {
				return
			}
			var de *DetectError
			var e *Error
			switch {
			case tc.says == "" && !errors.As(err, &e):
				t.Errorf("err = %v, want an *Error (invalid JSON)", err)
			case tc.says != "" && (!errors.As(err, &de) || !strings.Contains(de.Reason, tc.says)):
				t.Errorf("err = %v, want a *DetectError saying %q", err, tc.says)
			}
		})
	}
}

// parse is Parse of a one-off document, failing the test on an error.
func parse(t *testing.T, f Format, doc string, opts Options) *Result {
	t.Helper()
	res, err := Parse([]byte(doc), f, opts)
	if err != nil {
		t.Fatalf("Parse(%s): %v", doc, err)
	}
	return res
}

func entryJSON(t *testing.T, res *Result) string {
	t.Helper()
	m := map[string]*Entry{}
	for _, e := range res.Entries {
		m[e.Name] = e
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func notes(res *Result) string {
	var ss []string
	for _, n := range res.Notes {
		ss = append(ss, n.String())
	}
	return strings.Join(ss, "\n")
}

func moved(res *Result) string {
	var ss []string
	for _, m := range res.Moved {
		ss = append(ss, m.Name+"@"+m.Server)
	}
	return strings.Join(ss, " ")
}

// How values become the registry's: secrets moved, $ doubled where the
// registry expands, editors' own variables filled in or noted.
func TestParseValues(t *testing.T) {
	home := Options{Home: "/home/me", Workspace: "/w"}
	for _, tc := range []struct {
		name   string
		format Format
		doc    string
		want   string // the entries, as JSON
		moved  string // NAME@server …
		note   string // a note that must be there
	}{
		{"a secret env value moves", Claude,
			`{"mcpServers": {"a": {"command": "x", "env": {"API_KEY": "v1", "MODE": "m"}}}}`,
			`{"a":{"command":"x","env":{"API_KEY":"${API_KEY}","MODE":"m"}}}`, "API_KEY@a", ""},
		{"every secret-looking name, any case", Claude,
			`{"mcpServers": {"a": {"command": "x", "env": {"gh_token": "1", "Db_Password": "2", "client_secret": "3", "MY_PASSWD": "4", "AWS_CREDENTIALS": "5", "SESSION_COOKIE": "6", "keyring": "7"}}}}`,
			`{"a":{"command":"x","env":{"AWS_CREDENTIALS":"${AWS_CREDENTIALS}","Db_Password":"${Db_Password}","MY_PASSWD":"${MY_PASSWD}","SESSION_COOKIE":"${SESSION_COOKIE}","client_secret":"${client_secret}","gh_token":"${gh_token}","keyring":"${keyring}"}}}`,
			"AWS_CREDENTIALS@a Db_Password@a MY_PASSWD@a SESSION_COOKIE@a client_secret@a gh_token@a keyring@a", ""},
		{"a reference stays, an empty value stays", Claude,
			`{"mcpServers": {"a": {"command": "x", "env": {"API_KEY": "${MY_KEY}", "TOKEN": "", "SECRET": "pre-${X}"}}}}`,
			`{"a":{"command":"x","env":{"API_KEY":"${MY_KEY}","SECRET":"pre-${X}","TOKEN":""}}}`, "", ""},
		{"a literal $ is doubled where the registry expands", Claude,
			`{"mcpServers": {"a": {"command": "x", "args": ["$HOME", "a$$b"], "env": {"P": "5$", "Q": "a$$b", "R": "$HOME"}}}}`,
			`{"a":{"command":"x","args":["$HOME","a$$b"],"env":{"P":"5$$","Q":"a$$$$b","R":"$$HOME"}}}`, "", ""},
		{"an unknown ${…} becomes literal text", Claude,
			`{"mcpServers": {"a": {"command": "x", "env": {"V": "${VAR:-default}"}}}}`,
			`{"a":{"command":"x","env":{"V":"$${VAR:-default}"}}}`, "", "env/V holds ${VAR:-default}, which colibri does not know"},
		{"a literal secret that shares its server's name", Claude,
			`{"mcpServers": {"a": {"command": "x", "env": {"A-TOKEN": "v"}}}}`,
			`{"a":{"command":"x","env":{"A-TOKEN":"${A_A_TOKEN}"}}}`, "A_A_TOKEN@a", ""},
		{"two different secrets of one name get the servers' names", Claude,
			`{"mcpServers": {"a": {"command": "x", "env": {"API_KEY": "v1"}}, "b": {"command": "y", "env": {"API_KEY": "v2"}}}}`,
			`{"a":{"command":"x","env":{"API_KEY":"${A_API_KEY}"}},"b":{"command":"y","env":{"API_KEY":"${B_API_KEY}"}}}`, "A_API_KEY@a B_API_KEY@b", ""},
		{"one secret under one name is shared", Claude,
			`{"mcpServers": {"a": {"command": "x", "env": {"API_KEY": "v1"}}, "b": {"command": "y", "env": {"API_KEY": "v1"}}}}`,
			`{"a":{"command":"x","env":{"API_KEY":"${API_KEY}"}},"b":{"command":"y","env":{"API_KEY":"${API_KEY}"}}}`, "API_KEY@a API_KEY@b", ""},
		{"a secret header moves under SERVER_HEADER", Cursor,
			`{"mcpServers": {"gh.com": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer v", "X-Toolsets": "repos"}}}}`,
			`{"gh.com":{"url":"https://x/mcp","headers":{"Authorization":"${GH_COM_AUTHORIZATION}","X-Toolsets":"repos"}}}`, "GH_COM_AUTHORIZATION@gh.com", ""},
		{"Cursor's ${env:NAME}, ${userHome}, ${workspaceFolder}", Cursor,
			`{"mcpServers": {"a": {"command": "${userHome}/bin/a", "args": ["${workspaceFolder}${pathSeparator}x"], "env": {"K": "${env:MY_KEY}", "H": "${userHome}"}}}}`,
			`{"a":{"command":"/home/me/bin/a","args":["/w/x"],"env":{"H":"/home/me","K":"${MY_KEY}"}}}`, "", ""},
		{"Claude Desktop fills in nothing", Claude,
			`{"mcpServers": {"a": {"command": "x", "env": {"K": "${env:MY_KEY}", "H": "${userHome}"}}}}`,
			`{"a":{"command":"x","env":{"H":"${userHome}","K":"$${env:MY_KEY}"}}}`, "", ""},
		{"a variable in argv is kept and noted", VSCode,
			`{"servers": {"a": {"command": "x", "args": ["--key", "${input:k}"]}}}`,
			`{"a":{"command":"x","args":["--key","${input:k}"]}}`, "", "args/1 holds ${input:k}, kept as it is"},
		{"VS Code's inputs become variables", VSCode,
			`{"inputs": [{"id": "api-key", "type": "promptString", "password": true}], "servers": {"a": {"type": "stdio", "command": "x", "env": {"API_KEY": "${input:api-key}"}}}}`,
			`{"a":{"command":"x","env":{"API_KEY":"${API_KEY}"}}}`, "", `VS Code's input "api-key" becomes ${API_KEY}: set API_KEY in colibri's environment`},
		{"${workspaceFolder} of a user-level file", VSCode,
			`{"servers": {"a": {"command": "x", "args": ["${workspaceFolder}"], "env": {"D": "${workspaceFolder}"}}}}`,
			`{"a":{"command":"x","args":["${workspaceFolder}"],"env":{"D":"$${workspaceFolder}"}}}`, "", "a user-level file does not define"},
		{"a secret in argv is noted, not moved", Claude,
			`{"mcpServers": {"a": {"command": "x", "args": ["--api-key", "v", "--token=v", "--verbose", "on"]}}}`,
			`{"a":{"command":"x","args":["--api-key","v","--token=v","--verbose","on"]}}`, "", "args/1 looks like a secret (the value of --api-key)"},
		{"a secret in a url's query is noted", Cursor,
			`{"mcpServers": {"a": {"url": "https://x/mcp?api_key=v"}}}`,
			`{"a":{"url":"https://x/mcp?api_key=v"}}`, "", `the url's query parameter "api_key" looks like a secret`},
		{"a password in a url is noted", Cursor,
			`{"mcpServers": {"a": {"url": "https://me:pw@x/mcp"}}}`,
			`{"a":{"url":"https://me:pw@x/mcp"}}`, "", `the url holds a user name and password: they stay in the registry`},
		// An env value whose name says nothing may still be a login: a
		// database URL with its password, as server-postgres takes it.
		{"an env value that is a URL with a password moves", Claude,
			`{"mcpServers": {"a": {"command": "x", "env": {"DATABASE_URL": "postgres://me:pw@h/db", "HOME_URL": "https://h/", "NO_PW": "https://me@h/", "REF": "postgres://me:${PW}@h/db", "Q": "https://h/?token=t&x=1"}}}}`,
			`{"a":{"command":"x","env":{"DATABASE_URL":"${DATABASE_URL}","HOME_URL":"https://h/","NO_PW":"https://me@h/","Q":"${Q}","REF":"postgres://me:${PW}@h/db"}}}`,
			"DATABASE_URL@a Q@a", ""},
		{"an argument that is a URL with a password is noted", Claude,
			`{"mcpServers": {"a": {"command": "x", "args": ["postgresql://me:pw@localhost/db", "https://h/x"]}}}`,
			`{"a":{"command":"x","args":["postgresql://me:pw@localhost/db","https://h/x"]}}`, "",
			"args/0 is a URL with a password or a secret-looking query parameter: it stays in the registry as it is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := home
			if strings.Contains(tc.name, "user-level") {
				opts.Workspace = ""
			}
			res := parse(t, tc.format, tc.doc, opts)
			if got := entryJSON(t, res); got != tc.want {
				t.Errorf("entries\n got %s\nwant %s", got, tc.want)
			}
			if got := moved(res); got != tc.moved {
				t.Errorf("moved %q, want %q", got, tc.moved)
			}
			if !strings.Contains(notes(res), tc.note) {
				t.Errorf("notes lack %q:\n%s", tc.note, notes(res))
			}
		})
	}
}

// Each editor's shapes, and what cannot be imported.
func TestParseShapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format Format
		doc    string
		want   string
		note   string
	}{
		{"Claude Code's typed entries", Claude,
			`{"mcpServers": {"a": {"type": "http", "url": "https://x/mcp"}, "b": {"type": "sse", "url": "https://y/sse"}, "c": {"type": "stdio", "command": "c"}}}`,
			`{"a":{"url":"https://x/mcp"},"b":{"url":"https://y/sse","transport":"sse"},"c":{"command":"c"}}`, ""},
		{"Windsurf's serverUrl", Claude, `{"mcpServers": {"a": {"serverUrl": "https://x/mcp"}}}`, `{"a":{"url":"https://x/mcp"}}`, ""},
		{"a disabled server", Claude, `{"mcpServers": {"a": {"command": "x", "disabled": true}}}`, `{}`, `server "a": not imported: disabled in the editor`},
		{"an unknown type", VSCode, `{"servers": {"a": {"type": "websocket", "url": "ws://x"}}}`, `{}`, `unknown "type" "websocket"`},
		{"a type without its url", VSCode, `{"servers": {"a": {"type": "http", "command": "x"}}}`, `{}`, `"type" "http" needs a "url"`},
		{"command and url", Claude, `{"mcpServers": {"a": {"command": "x", "url": "https://x"}}}`, `{}`, `both "command" and "url"`},
		{"neither", Claude, `{"mcpServers": {"a": {"args": ["x"]}}}`, `{}`, `neither "command" nor "url"`},
		{"an unknown key", Claude, `{"mcpServers": {"a": {"command": "x", "autoApprove": ["t"]}}}`, `{"a":{"command":"x"}}`, `key "autoApprove" not imported`},
		{"a description", Claude, `{"mcpServers": {"a": {"command": "x", "description": "files"}}}`, `{"a":{"command":"x","description":"files"}}`, ""},
		{"remote keys on a command", Claude, `{"mcpServers": {"a": {"command": "x", "headers": {"H": "v"}}}}`, `{"a":{"command":"x"}}`, "headers not imported: they go with a url"},
		{"command keys on a url", Claude, `{"mcpServers": {"a": {"url": "https://x", "args": ["v"]}}}`, `{"a":{"url":"https://x"}}`, "args, env and cwd not imported"},
		{"a relative command", Claude, `{"mcpServers": {"a": {"command": "./bin/a"}}}`, `{"a":{"command":"./bin/a"}}`, "command is a relative path"},
		{"names the registry refuses", Claude,
			`{"mcpServers": {"my server": {"command": "a"}, "my-server": {"command": "b"}, "@scope/pkg": {"command": "c"}}}`,
			`{"my-server":{"command":"b"},"my-server-2":{"command":"a"},"scope-pkg":{"command":"c"}}`, `renamed from "my server"`},
		{"a null entry", Claude, `{"mcpServers": {"a": null}}`, `{}`, ""},
		{"no mcpServers", Claude, `{"context_servers": {}}`, `{}`, `the file has no "mcpServers": nothing to import (it looks like Zed ("context_servers"): try --from zed)`},
		{"VS Code settings.json", VSCode, `{"mcp": {"servers": {"a": {"command": "x"}}}}`, `{"a":{"command":"x"}}`, ""},
		{"Zed, flat", Zed, `{"context_servers": {"a": {"source": "custom", "command": "x", "args": ["1"], "env": {"E": "v"}}}}`, `{"a":{"command":"x","args":["1"],"env":{"E":"v"}}}`, ""},
		{"Zed, nested", Zed, `{"context_servers": {"a": {"command": {"path": "/x", "args": ["1"], "env": {"E": "v"}}, "settings": {}}}}`, `{"a":{"command":"/x","args":["1"],"env":{"E":"v"}}}`, ""},
		{"Zed, url", Zed, `{"context_servers": {"a": {"url": "https://x/mcp", "headers": {"X-Key": "v"}}}}`, `{"a":{"url":"https://x/mcp","headers":{"X-Key":"${A_X_KEY}"}}}`, ""},
		{"Zed, an extension's", Zed, `{"context_servers": {"a": {"source": "extension", "settings": {"token": "v"}}}}`, `{}`, "a Zed extension provides this server"},
		{"Zed, an older extension's", Zed, `{"context_servers": {"a": {"settings": {"token": "v"}}}}`, `{}`, "a Zed extension provides this server"},
		{"Zed, disabled", Zed, `{"context_servers": {"a": {"command": "x", "enabled": false}}}`, `{}`, "disabled in the editor"},
		{"Codex, stdio", Codex, "[mcp_servers.a]\ncommand = \"x\"\nargs = [\"1\"]\ncwd = \"/srv\"\nenv_vars = [\"TOKEN_A\", { name = \"B\", source = \"local\" }]\n[mcp_servers.a.env]\nE = \"v\"\n",
			`{"a":{"command":"x","args":["1"],"env":{"B":"${B}","E":"v","TOKEN_A":"${TOKEN_A}"},"cwd":"/srv"}}`, ""},
		{"Codex, timeouts", Codex, "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_ms = 1500\ntool_timeout_sec = 0.25\n",
			`{"a":{"command":"x","timeout_ms":1500,"call_timeout_ms":250}}`, ""},
		{"Codex, a timeout out of range", Codex, "[mcp_servers.a]\ncommand = \"x\"\ntool_timeout_sec = 100000\n",
			`{"a":{"command":"x"}}`, "tool_timeout_sec not imported: out of the registry's range"},
		{"Codex, remote", Codex, "[mcp_servers.a]\nurl = \"https://x/mcp\"\nbearer_token_env_var = \"A_PAT\"\nhttp_headers = { \"X-Mode\" = \"m\" }\nenv_http_headers = { \"X-Key\" = \"A_KEY\" }\n",
			`{"a":{"url":"https://x/mcp","headers":{"X-Key":"${A_KEY}","X-Mode":"m"},"bearer_token":"${A_PAT}"}}`, ""},
		{"Codex, OAuth", Codex, "[mcp_servers.a]\nurl = \"https://x/mcp\"\nscopes = [\"read\"]\n", `{"a":{"url":"https://x/mcp"}}`, `"scopes" not imported: if this server needs OAuth`},
		{"Codex, its own settings are quiet", Codex, "[mcp_servers.a]\ncommand = \"x\"\nrequired = true\n[mcp_servers.a.tools.t]\napproval_mode = \"prompt\"\n", `{"a":{"command":"x"}}`, ""},
		{"Codex, no servers", Codex, "model = \"o3\"\n", `{}`, "no [mcp_servers.NAME] tables"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := parse(t, tc.format, tc.doc, Options{})
			if got := entryJSON(t, res); got != tc.want {
				t.Errorf("entries\n got %s\nwant %s", got, tc.want)
			}
			if !strings.Contains(notes(res), tc.note) {
				t.Errorf("notes lack %q:\n%s", tc.note, notes(res))
			}
			if tc.note == "" && len(res.Notes) > 0 {
				t.Errorf("unexpected notes:\n%s", notes(res))
			}
		})
	}
}

// A value of the wrong type is an error at its location, naming the type
// found, never the value.
func TestParseTypeErrors(t *testing.T) {
	for _, tc := range []struct {
		format Format
		doc    string
		want   string
	}{
		{Claude, `{"mcpServers": {"a": {"command": "x", "args": ["ok", 1]}}}`, "/mcpServers/a/args/1: want a string, got a number"},
		{Claude, `{"mcpServers": {"a": {"command": ["sk-IMPORT-SECRET-123"]}}}`, "/mcpServers/a/command: want a string, got a list"},
		{Claude, `{"mcpServers": {"a": {"command": "x", "env": {"K": true}}}}`, "/mcpServers/a/env/K: want a string, got true or false"},
		{Claude, `{"mcpServers": {"a/b": "sk-IMPORT-SECRET-123"}}`, "/mcpServers/a~1b: want an object, got a string"},
		{Claude, `{"mcpServers": []}`, "/mcpServers: want an object, got a list"},
		{Claude, `["x"]`, "the file must hold a JSON object, got a list"},
		{Zed, `{"context_servers": {"a": {"command": {"args": []}}}}`, "/context_servers/a/command/path: want a string"},
		{Zed, `{"context_servers": {"a": {"command": "x", "enabled": "no"}}}`, "/context_servers/a/enabled: want true or false, got a string"},
		{Codex, "[mcp_servers.a]\ncommand = 1\n", "mcp_servers.a.command: want a string, got a number"},
		{Codex, "[mcp_servers.\"my server\"]\nargs = \"x\"\n", `mcp_servers."my server".args: want an array of strings, got a string`},
		{Codex, "[mcp_servers.a]\nenv_vars = [1]\n", "mcp_servers.a.env_vars[0]: want a variable name or a table with name, got a number"},
		{Codex, "mcp_servers = 1\n", "mcp_servers: want a table, got a number"},
		// Types of TOML's own, named in TOML's words, never Go's.
		{Codex, "[[mcp_servers.a]]\ncommand = \"x\"\n", "mcp_servers.a: want a table, got an array of tables"},
		{Codex, "[mcp_servers.a]\ncommand = 1979-05-27T07:32:00Z\n", "mcp_servers.a.command: want a string, got a date or time"},
		{Codex, "[mcp_servers.a]\nbearer_token = sk-IMPORT-SECRET-123\n", "line 2, column 16: invalid TOML: expected value (after the key mcp_servers.a.bearer_token)"},
		{Codex, "[mcp_servers.a]\nargs = [\"x\" sk]\n", "line 2, column 13: invalid TOML: expected a comma (',') or array terminator (']')"},
	} {
		_, err := Parse([]byte(tc.doc), tc.format, Options{})
		var e *Error
		if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %s", tc.doc, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "sk") && !strings.Contains(tc.want, "sk") {
			t.Errorf("%s: the error quotes the file: %v", tc.doc, err)
		}
	}
}

func TestVarName(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"github", "Authorization"}, "GITHUB_AUTHORIZATION"},
		{[]string{"1password", "X-API-Key"}, "MCP_1PASSWORD_X_API_KEY"},
		{[]string{"my.server", "--weird  header--"}, "MY_SERVER_WEIRD_HEADER"},
		{[]string{"github-pat"}, "GITHUB_PAT"},
		{[]string{"ünï", "-"}, "N"},
		{[]string{"", ""}, "MCP_SECRET"},
	} {
		if got := VarName(tc.in...); got != tc.want || !varref.ValidName(got) {
			t.Errorf("VarName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"API_KEY": true, "github_token": true, "Authorization": true, "X-Api-Key": true, "DB_PASSWORD": true,
		"CLIENT_SECRET": true, "Cookie": true, "PATH": false, "DEBUG": false, "X-Toolsets": false, "LOG_LEVEL": false,
	} {
		if SecretName(name) != want {
			t.Errorf("SecretName(%q) = %v", name, !want)
		}
	}
}

func TestLocations(t *testing.T) {
	getenv := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	none := getenv(nil)
	for _, tc := range []struct {
		f      Format
		goos   string
		getenv func(string) string
		want   []string
	}{
		{Claude, "linux", none, []string{"/h/.config/Claude/claude_desktop_config.json"}},
		{Claude, "freebsd", getenv(map[string]string{"XDG_CONFIG_HOME": "/x"}), []string{"/x/Claude/claude_desktop_config.json"}},
		{Claude, "linux", getenv(map[string]string{"XDG_CONFIG_HOME": "relative"}), []string{"/h/.config/Claude/claude_desktop_config.json"}},
		{Claude, "darwin", none, []string{"/h/Library/Application Support/Claude/claude_desktop_config.json"}},
		{Cursor, "linux", none, []string{"/p/.cursor/mcp.json", "/h/.cursor/mcp.json"}},
		{Cursor, "darwin", none, []string{"/p/.cursor/mcp.json", "/h/.cursor/mcp.json"}},
		{VSCode, "freebsd", none, []string{"/p/.vscode/mcp.json", "/h/.config/Code/User/mcp.json"}},
		{VSCode, "darwin", none, []string{"/p/.vscode/mcp.json", "/h/Library/Application Support/Code/User/mcp.json"}},
		{Zed, "linux", none, []string{"/h/.config/zed/settings.json"}},
		{Zed, "linux", getenv(map[string]string{"XDG_CONFIG_HOME": "/x"}), []string{"/x/zed/settings.json"}},
		{Zed, "darwin", getenv(map[string]string{"XDG_CONFIG_HOME": "/x"}), []string{"/h/.config/zed/settings.json"}},
		{Codex, "freebsd", nil, []string{"/h/.codex/config.toml"}},
		{Codex, "darwin", getenv(map[string]string{"CODEX_HOME": "/c"}), []string{"/c/config.toml"}},
	} {
		got := Locations(tc.f, tc.goos, "/h", "/p", tc.getenv)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("Locations(%s, %s) = %q, want %q", tc.f, tc.goos, got, tc.want)
		}
	}
	if WorkspaceOf("/p/.vscode/mcp.json") != "/p" || WorkspaceOf("/p/.cursor/mcp.json") != "/p" || WorkspaceOf("/h/.cursor/x/mcp.json") != "" {
		t.Error("WorkspaceOf")
	}
}

// Merge adds new names after the registry's own, keeps every name it has
// (never overwritten) and every other key, in order.
func TestMerge(t *testing.T) {
	existing := `{
	"$schema": "../docs/registry.schema.json",
	"servers": {"demo": {"command": "/bin/demo", "env": {"A": "${B}"}, "timeout_ms": 1.5e3}, "fs": {"command": "old"}}
}`
	entries := []*Entry{{Name: "fs", Command: "new"}, {Name: "web", URL: "https://x/?a=1&b=<2>"}}
	out, added, kept, err := Merge([]byte(existing), entries)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "$schema": "../docs/registry.schema.json",
  "servers": {
    "demo": {
      "command": "/bin/demo",
      "env": {
        "A": "${B}"
      },
      "timeout_ms": 1.5e3
    },
    "fs": {
      "command": "old"
    },
    "web": {
      "url": "https://x/?a=1&b=<2>"
    }
  }
}
`
	if string(out) != want {
		t.Errorf("Merge =\n%s\nwant\n%s", out, want)
	}
	if strings.Join(added, ",") != "web" || strings.Join(kept, ",") != "fs" {
		t.Errorf("added %q, kept %q", added, kept)
	}
	if got := string(Document(nil)); got != "{\n  \"servers\": {}\n}\n" {
		t.Errorf("Document(nil) = %q", got)
	}
	for _, bad := range []string{`[]`, `{"servers": []}`, `{"a": 1} x`} {
		if _, _, _, err := Merge([]byte(bad), entries); err == nil {
			t.Errorf("Merge(%s): no error", bad)
		}
	}
}

// The preview import prints hides the secrets that stay in an entry (in
// argv and in URLs), and only there: the entry itself, which is written,
// keeps them.
func TestPreviewHidesSecretsThatStay(t *testing.T) {
	res := parse(t, Claude, `{"mcpServers": {
		"l": {"command": "x", "args": ["--api-key", "s1", "--token=s2", "--verbose", "on", "postgresql://me:s3@h/db", "https://h/?key=s4&x=1"]},
		"r": {"url": "https://me:s5@h/mcp?access_token=s6&page=2"}}}`, Options{})
	var shown strings.Builder
	for _, e := range res.Entries {
		shown.Write(e.Preview())
	}
	for _, want := range []string{`"--api-key",`, `"<hidden>",`, `"--token=<hidden>",`, `"on",`, `"postgresql://me:<hidden>@h/db",`,
		`"https://h/?key=<hidden>&x=1"`, `"url": "https://me:<hidden>@h/mcp?access_token=<hidden>&page=2"`} {
		if !strings.Contains(shown.String(), want) {
			t.Errorf("the preview lacks %s:\n%s", want, shown.String())
		}
	}
	for _, secret := range []string{"s1", "s2", "s3", "s4", "s5", "s6"} {
		if strings.Contains(shown.String(), `"`+secret) || strings.Contains(shown.String(), ":"+secret) || strings.Contains(shown.String(), "="+secret) {
			t.Errorf("the preview shows %s:\n%s", secret, shown.String())
		}
	}
	if got := entryJSON(t, res); got != `{"l":{"command":"x","args":["--api-key","s1","--token=s2","--verbose","on","postgresql://me:s3@h/db","https://h/?key=s4\u0026x=1"]},"r":{"url":"https://me:s5@h/mcp?access_token=s6\u0026page=2"}}` {
		t.Errorf("the entries, as written: %s", got)
	}
}

// TOML nested deeper than syntax.MaxTOMLDepth is refused before BurntSushi/toml,
// whose cost grows with the square of the nesting, reads it (10,000 nested
// inline tables, 40 KB, took it 18 s and 4 GB). Brackets in strings and
// comments do not count.
func TestTOMLNesting(t *testing.T) {
	deep := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	for _, doc := range []string{
		"[mcp_servers.a]\ncommand = \"x\"\nenv = " + deep("{a=", "}", 2000) + "\n",
		"[mcp_servers.a]\ncommand = \"x\"\nargs = " + deep("[", "]", syntax.MaxTOMLDepth+1) + "\n",
	} {
		_, err := Parse([]byte(doc), Codex, Options{})
		if err == nil || !strings.HasPrefix(err.Error(), "line 3, column ") || !strings.HasSuffix(err.Error(), fmt.Sprintf("invalid TOML: arrays and inline tables nested more than %d deep", syntax.MaxTOMLDepth)) {
			t.Errorf("%.60s…: %v", doc, err)
		}
		if f, err := Detect([]byte(doc), "config"); err == nil {
			t.Errorf("Detect of a file too deep: %s", f)
		}
	}
	brackets := strings.Repeat("[{", 200)
	ok := "[mcp_servers.a]\ncommand = \"x\" # " + brackets + "\n" +
		"args = [\"" + brackets + "\", '" + brackets + "', \"\"\"\n" + brackets + "\"\"\", '''" + brackets + "''', \"\\\"" + brackets + "\"]\n" +
		"[other]\nnested = " + deep("[", "]", syntax.MaxTOMLDepth-1) + "\n"
	res, err := Parse([]byte(ok), Codex, Options{})
	if err != nil || len(res.Entries) != 1 || len(res.Entries[0].Args) != 5 {
		t.Errorf("brackets in strings and comments, and %d levels: %v", syntax.MaxTOMLDepth, err)
	}
}
