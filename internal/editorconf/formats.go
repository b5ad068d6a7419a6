package editorconf

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf/syntax"

	"github.com/colibri-mcp/colibri-mcp/internal/varref"
)

// converter turns one file's servers into entries.
type converter struct {
	format Format
	opts   Options
	res    *Result
	used   map[string]bool // registry names given so far
	own    map[string]bool // the editor's names that are valid registry names
}

// reserve keeps the editor's valid names for their own servers, so that a
// renamed server never takes one ("my server" does not become "my-server"
// when the file has a "my-server" too).
func (c *converter) reserve(names []string) {
	c.own = map[string]bool{}
	for _, n := range names {
		if validName(n) {
			c.own[n] = true
		}
	}
}

func (c *converter) note(server, msg string) {
	c.res.Notes = append(c.res.Notes, Note{Server: server, Message: msg})
}

// spec is one server as the editor described it, before translation.
type spec struct {
	command     string
	args        []string
	env         map[string]string
	envRefs     []string // variables passed on as they are (Codex's env_vars)
	cwd         string
	url         string
	transport   string // "" (Streamable HTTP) or "sse"
	headers     map[string]string
	headerRefs  map[string]string // header → variable (Codex's env_http_headers)
	bearer      string            // a literal token (Codex's bearer_token)
	bearerVar   string            // a variable's name (Codex's bearer_token_env_var)
	description string
	timeoutMS   int64
	callMS      int64
	sandbox     *sandboxSpec // VS Code's, when sandboxEnabled
	oauth       *oauthSpec   // Claude Code's
}

type jsonFormat int

const (
	mcpServersFormat jsonFormat = iota // Claude Desktop, Cursor
	vscodeFormat
	zedFormat
)

func (c *converter) parseJSON(data []byte, f jsonFormat) error {
	doc, err := decodeJSONC(data)
	if err != nil {
		return err
	}
	root, err := node{v: doc}.object()
	if err != nil {
		return &Error{Message: "the file must hold a JSON object, got " + typeName(doc, false)}
	}
	key := map[jsonFormat]string{mcpServersFormat: "mcpServers", vscodeFormat: "servers", zedFormat: "context_servers"}[f]
	servers, ok := root.get(key)
	if !ok && f == vscodeFormat {
		// User settings.json keeps them under "mcp".
		if mcp, ok2 := root.get("mcp"); ok2 {
			if m, err := mcp.object(); err == nil {
				servers, ok = m.get("servers")
			}
		}
	}
	if !ok {
		msg := fmt.Sprintf("the file has no %q: nothing to import", key)
		if other, err := Detect(data, ""); err == nil && other.family() != c.format.family() {
			msg += fmt.Sprintf(" (it looks like %s: try --from %s)", other.Describe(), other)
		}
		c.note("", msg)
		return nil
	}
	return c.eachServer(servers, func(name string, entry object) (*spec, error) {
		switch f {
		case mcpServersFormat:
			return c.fromMCPServers(name, entry)
		case vscodeFormat:
			return c.fromVSCode(name, entry)
		default: // zedFormat
			return c.fromZed(name, entry)
		}
	})
}

// eachServer converts each member of servers (the editor's table of
// servers, by name) with read, in name order, and adds what it returns. A
// null member is skipped (JSON; TOML has none).
func (c *converter) eachServer(servers node, read func(name string, entry object) (*spec, error)) error {
	obj, err := servers.object()
	if err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(obj.m))
	c.reserve(names)
	for _, name := range names {
		n, _ := obj.get(name)
		if n.v == nil {
			continue
		}
		entry, err := n.object()
		if err != nil {
			return err
		}
		s, err := read(name, entry)
		if err != nil {
			return err
		}
		if s != nil {
			c.add(name, s)
		}
	}
	return nil
}

// family groups formats that share a file shape.
func (f Format) family() Format {
	if f == Cursor {
		return Claude
	}
	return f
}

// common reads the keys most editors share: command, args, env, cwd, url,
// headers. It returns the keys it consumed.
func common(o object, s *spec) ([]string, error) {
	var err error
	if s.command, err = o.str("command"); err != nil {
		return nil, err
	}
	if s.args, err = o.strings("args"); err != nil {
		return nil, err
	}
	if s.env, err = o.stringMap("env"); err != nil {
		return nil, err
	}
	if s.cwd, err = o.str("cwd"); err != nil {
		return nil, err
	}
	if s.url, err = o.str("url"); err != nil {
		return nil, err
	}
	if s.headers, err = o.stringMap("headers"); err != nil {
		return nil, err
	}
	return []string{"command", "args", "env", "cwd", "url", "headers"}, nil
}

// transport maps an editor's "type" to the registry's transport; ok is
// false for a type colibri does not know.
func transport(t string) (remote bool, tr string, ok bool) {
	switch strings.ToLower(t) {
	case "", "stdio":
		return false, "", true
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		return true, "", true
	case "sse":
		return true, "sse", true
	}
	return false, "", false
}

// typed applies an editor's "type" to s; false (and a note) when the type
// is unknown or contradicts the entry.
func (c *converter) typed(name string, o object, s *spec) (bool, error) {
	t, err := o.str("type")
	if err != nil {
		return false, err
	}
	remote, tr, ok := transport(t)
	switch {
	case !ok:
		c.note(name, fmt.Sprintf("not imported: unknown \"type\" %q (want stdio, http or sse)", t))
		return false, nil
	case t != "" && remote && s.url == "":
		c.note(name, fmt.Sprintf("not imported: \"type\" %q needs a \"url\"", t))
		return false, nil
	case t != "" && !remote && s.command == "":
		c.note(name, "not imported: \"type\" \"stdio\" needs a \"command\"")
		return false, nil
	}
	s.transport = tr
	return true, nil
}

// leftovers notes every key of o that was neither read nor known to be
// irrelevant.
func (c *converter) leftovers(name string, o object, read []string, quiet ...string) {
	for _, k := range slices.Sorted(maps.Keys(o.m)) {
		if slices.Contains(read, k) || slices.Contains(quiet, k) {
			continue
		}
		c.note(name, fmt.Sprintf("key %q not imported (colibri's registry has no such setting)", k))
	}
}

// fromMCPServers reads Claude Desktop's and Cursor's entries (and Claude
// Code's .mcp.json, which has "type" and "url" too, and Windsurf's, whose
// url is "serverUrl").
func (c *converter) fromMCPServers(name string, o object) (*spec, error) {
	s := &spec{}
	read, err := common(o, s)
	if err != nil {
		return nil, err
	}
	if s.description, err = o.str("description"); err != nil {
		return nil, err
	}
	if s.url == "" { // Windsurf's name for it
		if s.url, err = o.str("serverUrl"); err != nil {
			return nil, err
		}
	}
	if ok, err := c.typed(name, o, s); !ok || err != nil {
		return nil, err
	}
	if disabled, _, err := o.boolean("disabled"); err != nil || disabled {
		if disabled {
			c.note(name, "not imported: disabled in the editor")
		}
		return nil, err
	}
	if o.has("envFile") {
		c.note(name, "\"envFile\" not imported: put the variables the server needs in its \"env\" (with ${NAME} for secrets)")
	}
	if err := c.readClaudeOAuth(name, o, s); err != nil {
		return nil, err
	}
	c.leftovers(name, o, append(read, "type", "description", "disabled", "envFile", "serverUrl", "oauth"))
	return s, nil
}

// fromVSCode reads a VS Code entry: "type" stdio, http or sse (inferred when
// absent), and ${input:ID} references to its "inputs".
func (c *converter) fromVSCode(name string, o object) (*spec, error) {
	s := &spec{}
	read, err := common(o, s)
	if err != nil {
		return nil, err
	}
	if ok, err := c.typed(name, o, s); !ok || err != nil {
		return nil, err
	}
	if o.has("envFile") {
		c.note(name, "\"envFile\" not imported: put the variables the server needs in its \"env\" (with ${NAME} for secrets)")
	}
	if err := c.readVSCodeSandbox(name, o, s); err != nil {
		return nil, err
	}
	// "dev" is VS Code's watch-and-debug mode for server authors;
	// "gallery" and "version" record where an installed server came from.
	c.leftovers(name, o, append(read, "type", "envFile", "sandboxEnabled", "sandbox"), "dev", "gallery", "version")
	return s, nil
}

// fromZed reads a Zed context server: {"command": "…", "args", "env"}, the
// older {"command": {"path", "args", "env"}}, or {"url", "headers"}; one
// that an extension provides ("source": "extension", or "settings" alone)
// cannot be imported.
func (c *converter) fromZed(name string, o object) (*spec, error) {
	s := &spec{}
	source, err := o.str("source")
	if err != nil {
		return nil, err
	}
	if enabled, set, err := o.boolean("enabled"); err != nil || set && !enabled {
		if set && !enabled {
			c.note(name, "not imported: disabled in the editor (\"enabled\": false)")
		}
		return nil, err
	}
	read := []string{"source", "enabled", "settings"}
	if cmd, ok := o.get("command"); ok {
		if nested, isObj := cmd.v.(map[string]any); isObj {
			inner := object{cmd, nested}
			if s.command, err = inner.str("path"); err != nil {
				return nil, err
			}
			if s.args, err = inner.strings("args"); err != nil {
				return nil, err
			}
			if s.env, err = inner.stringMap("env"); err != nil {
				return nil, err
			}
			c.leftovers(name, inner, []string{"path", "args", "env"})
			read = append(read, "command")
			if s.command == "" {
				return nil, cmd.child("path").wrong("a string")
			}
		}
	}
	if s.command == "" {
		r, err := common(o, s)
		if err != nil {
			return nil, err
		}
		read = append(read, r...)
	} else {
		// The older form may still carry url or headers beside it.
		if s.url, err = o.str("url"); err != nil {
			return nil, err
		}
		if s.headers, err = o.stringMap("headers"); err != nil {
			return nil, err
		}
		read = append(read, "url", "headers")
	}
	if source == "extension" || s.command == "" && s.url == "" && o.has("settings") {
		c.note(name, "not imported: a Zed extension provides this server; add it to the registry by hand with the command the extension runs")
		return nil, nil
	}
	c.leftovers(name, o, read)
	return s, nil
}

// parseCodex reads Codex's config.toml: [mcp_servers.NAME] tables.
func (c *converter) parseCodex(data []byte) error {
	if err := fromSyntax(syntax.TOMLNesting(data)); err != nil {
		return err
	}
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return tomlError(err)
	}
	root := object{node{v: doc, toml: true}, doc}
	servers, ok := root.get("mcp_servers")
	if !ok {
		c.note("", "the file has no [mcp_servers.NAME] tables: nothing to import")
		return nil
	}
	return c.eachServer(servers, c.fromCodex)
}

// fromCodex reads one [mcp_servers.NAME] table (codex-rs/config's
// RawMcpServerConfig): stdio keys command, args, env, env_vars, cwd;
// Streamable HTTP keys url, bearer_token_env_var, http_headers,
// env_http_headers; timeouts startup_timeout_sec (or _ms) and
// tool_timeout_sec.
func (c *converter) fromCodex(name string, o object) (*spec, error) {
	s := &spec{}
	var err error
	if enabled, set, err := o.boolean("enabled"); err != nil || set && !enabled {
		if set && !enabled {
			c.note(name, "not imported: disabled in Codex (enabled = false)")
		}
		return nil, err
	}
	if s.command, err = o.str("command"); err != nil {
		return nil, err
	}
	if s.args, err = o.strings("args"); err != nil {
		return nil, err
	}
	if s.env, err = o.stringMap("env"); err != nil {
		return nil, err
	}
	if n, ok := o.get("env_vars"); ok {
		list, isList := n.v.([]any)
		if !isList {
			return nil, n.wrong("an array")
		}
		for i, v := range list {
			el := n.index(i)
			el.v = v
			switch v := v.(type) {
			case string:
				s.envRefs = append(s.envRefs, v)
			case map[string]any:
				name, err := object{el, v}.str("name")
				if err != nil {
					return nil, err
				}
				s.envRefs = append(s.envRefs, name)
			default:
				return nil, el.wrong("a variable name or a table with name")
			}
		}
	}
	if s.cwd, err = o.str("cwd"); err != nil {
		return nil, err
	}
	if s.url, err = o.str("url"); err != nil {
		return nil, err
	}
	if s.bearer, err = o.str("bearer_token"); err != nil {
		return nil, err
	}
	if s.bearerVar, err = o.str("bearer_token_env_var"); err != nil {
		return nil, err
	}
	if s.headers, err = o.stringMap("http_headers"); err != nil {
		return nil, err
	}
	if s.headerRefs, err = o.stringMap("env_http_headers"); err != nil {
		return nil, err
	}
	if sec, ok, err := o.number("startup_timeout_sec"); err != nil {
		return nil, err
	} else if ok {
		s.timeoutMS = c.millis(name, "startup_timeout_sec", sec*1000)
	} else if ms, ok, err := o.number("startup_timeout_ms"); err != nil {
		return nil, err
	} else if ok {
		s.timeoutMS = c.millis(name, "startup_timeout_ms", ms)
	}
	if sec, ok, err := o.number("tool_timeout_sec"); err != nil {
		return nil, err
	} else if ok {
		s.callMS = c.millis(name, "tool_timeout_sec", sec*1000)
	}
	read := []string{"command", "args", "env", "env_vars", "cwd", "url", "bearer_token", "bearer_token_env_var",
		"http_headers", "env_http_headers", "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec", "enabled"}
	for _, k := range []string{"oauth", "scopes", "oauth_resource"} {
		if o.has(k) {
			c.note(name, fmt.Sprintf("%q not imported: if this server needs OAuth, give its registry entry an \"oauth\" setting (docs/oauth.md)", k))
			read = append(read, k)
		}
	}
	for _, k := range []string{"enabled_tools", "disabled_tools"} {
		if o.has(k) {
			c.note(name, fmt.Sprintf("%q not imported: every tool of the server is listed", k))
			read = append(read, k)
		}
	}
	// Codex's own approval and scheduling settings mean nothing to colibri.
	c.leftovers(name, o, read, "required", "supports_parallel_tool_calls", "default_tools_approval_mode", "tools", "name", "experimental_environment")
	return s, nil
}

// millis rounds a timeout to whole milliseconds within the registry's range
// (1 ms to 24 hours); out of range it is dropped, and noted.
func (c *converter) millis(name, key string, ms float64) int64 {
	if ms < 1 || ms > 24*60*60*1000 {
		c.note(name, fmt.Sprintf("%s not imported: out of the registry's range (1 ms to 24 hours)", key))
		return 0
	}
	return int64(ms + 0.5)
}

// validName is the registry's rule for server names.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i, r := range name {
		switch {
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case i > 0 && (r == '_' || r == '.' || r == '-'):
		default:
			return false
		}
	}
	return true
}

// tomlError is a TOML syntax error at its line and column. BurntSushi/toml
// quotes what it found ("expected value but found \"sk\" instead"), which may
// be part of a secret written without quotes: only what was expected is
// kept.
func tomlError(err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		for _, cut := range []string{" but found", ", but got", " but got", " found"} {
			if i := strings.Index(msg, cut); i >= 0 {
				msg = msg[:i]
			}
		}
		e := &Error{Line: pe.Position.Line, Column: pe.Position.Col, Message: "invalid TOML: " + msg}
		if pe.LastKey != "" {
			e.Message += fmt.Sprintf(" (after the key %s)", pe.LastKey)
		}
		return e
	}
	return &Error{Message: "invalid TOML"}
}

// add translates one server into an entry under a registry name.
func (c *converter) add(editorName string, s *spec) {
	switch {
	case s.command != "" && s.url != "":
		c.note(editorName, "not imported: it has both \"command\" and \"url\"")
		return
	case s.command == "" && s.url == "":
		c.note(editorName, "not imported: it has neither \"command\" nor \"url\"")
		return
	}
	name := c.entryName(editorName)
	e := &Entry{Name: name, EditorName: editorName, Description: s.description, TimeoutMS: s.timeoutMS, CallTimeoutMS: s.callMS}
	if s.url != "" {
		c.remote(e, s)
	} else {
		c.stdio(e, s)
	}
	c.res.Entries = append(c.res.Entries, e)
}

func (c *converter) stdio(e *Entry, s *spec) {
	e.Command, _ = c.translate(e.Name, s.command, where{key: "command"})
	if !filepath.IsAbs(e.Command) && strings.Contains(e.Command, "/") {
		c.note(e.Name, "command is a relative path: the registry resolves it against the registry file's folder, not the editor's; make it absolute")
	}
	for i, a := range s.args {
		a, _ = c.translate(e.Name, a, where{key: fmt.Sprintf("args/%d", i)})
		e.Args = append(e.Args, a)
	}
	for _, k := range slices.Sorted(maps.Keys(s.env)) {
		if e.Env == nil {
			e.Env = map[string]string{}
		}
		variable := k
		if !varref.ValidName(k) {
			variable = VarName(e.Name, k)
		}
		e.Env[k] = c.secretValue(e, s.env[k], where{key: "env/" + k, expr: true}, SecretName(k) || credentials(s.env[k]), variable, "env "+k)
	}
	for _, k := range s.envRefs {
		if e.Env == nil {
			e.Env = map[string]string{}
		}
		if _, set := e.Env[k]; !set && varref.ValidName(k) {
			e.Env[k] = "${" + k + "}"
		}
	}
	if s.cwd != "" {
		e.Cwd, _ = c.translate(e.Name, s.cwd, where{key: "cwd"})
		if !filepath.IsAbs(e.Cwd) {
			c.note(e.Name, "cwd is a relative path: the registry resolves it against the registry file's folder; make it absolute")
		}
	}
	for _, k := range []struct {
		set bool
		key string
	}{{len(s.headers) > 0, "headers"}, {len(s.headerRefs) > 0, "env_http_headers"}, {s.bearer != "" || s.bearerVar != "", "bearer token"}} {
		if k.set {
			c.note(e.Name, k.key+" not imported: they go with a url, and this server runs a command")
		}
	}
	if s.sandbox != nil {
		c.sandbox(e, s.sandbox)
	}
	if s.oauth != nil {
		c.note(e.Name, "oauth not imported: it goes with a url, and this server runs a command")
	}
	c.argSecrets(e)
}

func (c *converter) remote(e *Entry, s *spec) {
	e.URL, _ = c.translate(e.Name, s.url, where{key: "url"})
	e.Transport = s.transport
	for _, h := range slices.Sorted(maps.Keys(s.headers)) {
		if e.Headers == nil {
			e.Headers = map[string]string{}
		}
		e.Headers[h] = c.secretValue(e, s.headers[h], where{key: "headers/" + h, expr: true}, SecretName(h) || credentials(s.headers[h]), VarName(e.Name, h), "header "+h)
	}
	for _, h := range slices.Sorted(maps.Keys(s.headerRefs)) {
		if e.Headers == nil {
			e.Headers = map[string]string{}
		}
		if v := s.headerRefs[h]; varref.ValidName(v) {
			e.Headers[h] = "${" + v + "}"
		} else {
			c.note(e.Name, fmt.Sprintf("env_http_headers %q: %q is not a variable name: not imported", h, v))
		}
	}
	switch {
	case s.bearerVar != "" && varref.ValidName(s.bearerVar):
		e.BearerToken = "${" + s.bearerVar + "}"
	case s.bearerVar != "":
		c.note(e.Name, fmt.Sprintf("bearer_token_env_var %q is not a variable name: not imported", s.bearerVar))
	case s.bearer != "":
		e.BearerToken = c.secretValue(e, s.bearer, where{key: "bearer_token", expr: true}, true, VarName(e.Name, "BEARER_TOKEN"), "bearer_token")
	}
	if len(s.args) > 0 || len(s.env) > 0 || len(s.envRefs) > 0 || s.cwd != "" {
		c.note(e.Name, "args, env and cwd not imported: they go with a command, and this server is remote")
	}
	if s.sandbox != nil {
		c.note(e.Name, "sandbox not imported: colibri sandboxes the processes it starts, and this server is remote")
	}
	if s.oauth != nil {
		c.oauth(e, s.oauth)
	}
	c.urlSecrets(e)
}

// entryName is the registry's name for an editor's server name: the
// registry allows ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$, so other characters
// become "-", and a name taken already gets -2, -3….
func (c *converter) entryName(editorName string) string {
	if c.used == nil {
		c.used = map[string]bool{}
	}
	if validName(editorName) && !c.used[editorName] {
		c.used[editorName] = true
		return editorName
	}
	var b strings.Builder
	for _, r := range editorName {
		switch {
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.TrimLeft(b.String(), "_.-")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		name = "server"
	}
	base := name
	for n := 2; c.used[name] || c.own[name]; n++ {
		suffix := fmt.Sprintf("-%d", n)
		name = base[:min(len(base), 64-len(suffix))] + suffix
	}
	c.used[name] = true
	if name != editorName {
		c.note(name, fmt.Sprintf("renamed from %q: a registry name is letters, digits, \"_\", \".\" and \"-\", at most 64", editorName))
	}
	return name
}
