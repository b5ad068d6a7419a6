// Package editorconf turns an editor's MCP configuration into colibri
// registry entries: Claude Desktop's and Cursor's "mcpServers", VS Code's
// "servers", Zed's "context_servers" and Codex's [mcp_servers.NAME] tables.
// It is pure: bytes in, entries out; reading and writing files is the
// caller's (colibri-mcp import).
//
//	res, err := editorconf.Parse(data, editorconf.Cursor, editorconf.Options{Home: home})
//	if err != nil {
//		return err // e.g. line 3, column 9: invalid JSON: …
//	}
//	doc := editorconf.Document(res.Entries) // {"servers": {…}}, the registry's shape
//
// A literal secret never reaches an Entry: an env or header value whose
// name looks secret (see [SecretName]) becomes a ${NAME} reference, and
// res.Moved lists it, so that the secret moves to colibri's environment
// instead of the registry. Nothing this package returns holds such a value,
// errors and notes included.
package editorconf

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Format is an editor's configuration format, as `--from` names it.
type Format string

// The formats colibri-mcp import reads.
const (
	Claude Format = "claude" // Claude Desktop: {"mcpServers": {…}}
	Cursor Format = "cursor" // Cursor: {"mcpServers": {…}}, with ${env:NAME}, ${userHome}, ${workspaceFolder}
	VSCode Format = "vscode" // VS Code: {"servers": {…}, "inputs": […]}, or "mcp" in settings.json
	Zed    Format = "zed"    // Zed: settings.json's "context_servers"
	Codex  Format = "codex"  // Codex: config.toml's [mcp_servers.NAME]
)

// Formats are the formats in the order help lists them.
var Formats = []Format{Claude, Cursor, VSCode, Zed, Codex}

// FormatNames are the formats as words, for help and suggestions.
func FormatNames() []string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return names
}

// Describe names the editor and the key its servers live under.
func (f Format) Describe() string {
	switch f {
	case Claude:
		return `Claude Desktop ("mcpServers")`
	case Cursor:
		return `Cursor ("mcpServers")`
	case VSCode:
		return `VS Code ("servers")`
	case Zed:
		return `Zed ("context_servers")`
	case Codex:
		return "Codex ([mcp_servers.NAME])"
	}
	return string(f)
}

// Entry is one server in the registry's shape (docs/registry.md): a
// command entry, or a url entry for a remote server. It marshals to exactly
// the JSON the registry holds, keys in the order docs/registry.md lists them.
type Entry struct {
	Name          string            `json:"-"`
	EditorName    string            `json:"-"` // its name in the editor's file
	Command       string            `json:"command,omitempty"`
	URL           string            `json:"url,omitempty"`
	Args          []string          `json:"args,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Cwd           string            `json:"cwd,omitempty"`
	Transport     string            `json:"transport,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	BearerToken   string            `json:"bearer_token,omitempty"`
	TimeoutMS     int64             `json:"timeout_ms,omitempty"`
	CallTimeoutMS int64             `json:"call_timeout_ms,omitempty"`
	Description   string            `json:"description,omitempty"`
	Sandbox       *Sandbox          `json:"sandbox,omitempty"`
	OAuth         *OAuth            `json:"oauth,omitempty"`

	hidden map[string]string // secrets that stay, by location, as Preview shows them
}

// Remote reports whether the entry is a url entry.
func (e *Entry) Remote() bool { return e.URL != "" }

// Variables are the names of colibri's environment variables the entry
// reads (its ${NAME} references in env, headers and bearer_token), sorted.
func (e *Entry) Variables() []string {
	var names []string
	add := func(v string) {
		for _, n := range references(v) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	for _, v := range e.Env {
		add(v)
	}
	for _, v := range e.Headers {
		add(v)
	}
	add(e.BearerToken)
	slices.Sort(names)
	return names
}

// Result is what Parse found in one file.
type Result struct {
	Format  Format
	Entries []*Entry // sorted by name
	Moved   []Moved  // literal secrets turned into ${NAME} references
	Notes   []Note   // servers skipped or renamed, keys not imported, what to check
}

// Moved is a literal secret that became a ${Name} reference: colibri's
// environment must now hold the value, which stays in the editor's file.
type Moved struct {
	Name   string // the variable
	Server string // the entry that refers to it
	From   string // where the value was: "env API_KEY", "header Authorization", "bearer_token"

	value string // to tell two servers' secrets of one name apart; never shown
}

// Value is the secret itself, for import --env-file to write where only
// colibri reads it; never print it.
func (m Moved) Value() string { return m.value }

func (m Moved) String() string {
	return fmt.Sprintf("moved to environment: %s (server %s)", m.Name, m.Server)
}

// Note is something the user should know about one server (or the file, when
// Server is ""). It never holds a value from the file, only names and
// locations.
type Note struct {
	Server  string
	Message string
}

func (n Note) String() string {
	if n.Server == "" {
		return n.Message
	}
	return fmt.Sprintf("server %q: %s", n.Server, n.Message)
}

// Options are what the editor would fill in for its own variables.
type Options struct {
	// Home replaces ${userHome} (VS Code, Cursor).
	Home string
	// Workspace replaces ${workspaceFolder} (VS Code, Cursor): the folder
	// that holds the file's .vscode or .cursor folder; "" when the file is
	// a user-level one, and then the variable is kept and noted.
	Workspace string
	// NetList says that the registry takes a list of destinations in a
	// sandbox's "net": VS Code's allowedDomains become it (otherwise the
	// entry gets no network, noted).
	NetList bool
	// NoSandbox is why this colibri sandboxes nothing ("" when it does):
	// VS Code's sandbox is then noted, not imported.
	NoSandbox string
}

// Error is a file that cannot be read as the format it was given as: where
// (a line and column, or a location in the document) and what. It never
// quotes a value of the file.
type Error struct {
	Line, Column int    // 1-based, 0 when unknown
	Location     string // a JSON Pointer ("/mcpServers/github/args"), or a TOML key path; "" for the file as a whole
	Message      string
}

func (e *Error) Error() string {
	var where []string
	if e.Line > 0 {
		where = append(where, fmt.Sprintf("line %d, column %d", e.Line, e.Column))
	}
	if e.Location != "" {
		where = append(where, e.Location)
	}
	if len(where) == 0 {
		return e.Message
	}
	return strings.Join(where, ": ") + ": " + e.Message
}

// Parse reads data as the configuration format f and returns the registry
// entries it describes. A malformed file or a value of the wrong type is an
// *Error; a server colibri cannot host, or a key it cannot import, is a Note.
func Parse(data []byte, f Format, opts Options) (*Result, error) {
	c := &converter{format: f, opts: opts, res: &Result{Format: f}}
	var err error
	switch f {
	case Claude, Cursor:
		err = c.parseJSON(data, mcpServersFormat)
	case VSCode:
		err = c.parseJSON(data, vscodeFormat)
	case Zed:
		err = c.parseJSON(data, zedFormat)
	case Codex:
		err = c.parseCodex(data)
	default:
		return nil, &Error{Message: fmt.Sprintf("unknown format %q: want one of %s", f, strings.Join(FormatNames(), ", "))}
	}
	if err != nil {
		return nil, err
	}
	c.finish()
	return c.res, nil
}

// finish sorts the result and gives two different secrets of one name
// different variables.
func (c *converter) finish() {
	res := c.res
	sort.Slice(res.Entries, func(i, j int) bool { return res.Entries[i].Name < res.Entries[j].Name })
	c.separateSecrets()
	sort.SliceStable(res.Moved, func(i, j int) bool {
		if res.Moved[i].Server != res.Moved[j].Server {
			return res.Moved[i].Server < res.Moved[j].Server
		}
		return res.Moved[i].Name < res.Moved[j].Name
	})
}
