package editorconf

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/varref"
)

// secretWords make a variable or header name look secret, wherever they
// appear in it, in any case. The contract names TOKEN, KEY, SECRET and
// PASSWORD; the others catch what those miss: PASSWD, CREDENTIAL, COOKIE, and
// AUTH for the Authorization header (and X-Auth-…, OAUTH_…).
var secretWords = []string{"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "COOKIE", "AUTH"}

// SecretName reports whether a variable or header called name looks like it
// holds a secret: its literal value is then moved to colibri's environment.
func SecretName(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// VarName turns words (a server name and a header name, say) into a valid
// environment variable name: upper case, every run of other characters one
// "_", never a leading digit. VarName("github", "Authorization") is
// GITHUB_AUTHORIZATION; VarName("1password", "X-API-Key") is
// MCP_1PASSWORD_X_API_KEY.
func VarName(words ...string) string {
	var b strings.Builder
	under := false
	for _, w := range words {
		for _, r := range w {
			switch {
			case r >= 'a' && r <= 'z':
				r -= 'a' - 'A'
				fallthrough
			case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
				if under && b.Len() > 0 {
					b.WriteByte('_')
				}
				under = false
				b.WriteRune(r)
			default:
				under = true
			}
		}
		under = true
	}
	name := b.String()
	switch {
	case name == "":
		return "MCP_SECRET"
	case name[0] >= '0' && name[0] <= '9':
		return "MCP_" + name
	}
	return name
}

// references are the ${NAME} references of a registry value (one already
// translated: every other $ is doubled).
func references(v string) []string {
	var names []string
	_ = varref.Each(v, func(string) {}, func(name string) error {
		names = append(names, name)
		return nil
	})
	return names
}

// where says which value of an entry is being translated, for notes.
type where struct {
	key  string // "command", "args/2", "env/API_KEY", "headers/Authorization", "url", "cwd"
	expr bool   // the registry expands ${NAME} here (env, headers, bearer_token)
}

// translate turns an editor's value into the registry's. In env and headers
// (w.expr) the registry expands ${NAME} and reads $$ as $, so every $ of the
// editor's that is not a reference is doubled, ${env:NAME} becomes ${NAME},
// and VS Code's ${input:ID} becomes ${VARNAME} (noted: colibri's environment
// must now hold what the editor prompted for). ${userHome} and
// ${workspaceFolder} (VS Code, Cursor) are filled in everywhere. Elsewhere
// (command, args, cwd, url) colibri expands nothing: a reference left there
// is kept as text, and noted. It reports whether the result refers to any
// variable.
func (c *converter) translate(server, v string, w where) (string, bool) {
	if !strings.Contains(v, "$") {
		return v, false
	}
	var b strings.Builder
	refers := false
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if ch != '$' {
			b.WriteByte(ch)
			continue
		}
		end := -1
		if i+1 < len(v) && v[i+1] == '{' {
			end = strings.IndexByte(v[i+2:], '}')
		}
		if end < 0 {
			if w.expr {
				b.WriteString("$$")
			} else {
				b.WriteByte('$')
			}
			continue
		}
		inner := v[i+2 : i+2+end]
		whole := v[i : i+2+end+1]
		i += 2 + end
		if text, ok := c.editorVariable(server, inner, w); ok {
			if w.expr {
				text = strings.ReplaceAll(text, "$", "$$")
			}
			b.WriteString(text)
			continue
		}
		if !w.expr {
			b.WriteString(whole)
			c.note(server, fmt.Sprintf("%s holds %s, kept as it is: colibri expands variables only in env, headers and bearer_token; edit the entry if the editor filled it in", w.key, whole))
			continue
		}
		name, ok := c.reference(server, inner, w)
		if !ok {
			b.WriteString("$" + whole)
			c.note(server, fmt.Sprintf("%s holds %s, which colibri does not know: kept as literal text", w.key, whole))
			continue
		}
		b.WriteString("${" + name + "}")
		refers = true
	}
	return b.String(), refers
}

// editorVariable fills in VS Code's and Cursor's own variables (userHome,
// workspaceFolder, pathSeparator); ok is false for anything else.
func (c *converter) editorVariable(server, inner string, w where) (string, bool) {
	if c.format != VSCode && c.format != Cursor {
		return "", false
	}
	switch inner {
	case "userHome":
		if c.opts.Home != "" {
			return c.opts.Home, true
		}
	case "workspaceFolder":
		if c.opts.Workspace != "" {
			return c.opts.Workspace, true
		}
		c.note(server, fmt.Sprintf("%s holds ${workspaceFolder}, which a user-level file does not define: kept as literal text; put the folder's path there", w.key))
		return "${workspaceFolder}", true // in env and headers, its $ is doubled: literal text
	case "pathSeparator", "/":
		return "/", true
	}
	return "", false
}

// reference maps a ${…} of the editor's, in an env or header value, to the
// name of one of colibri's variables.
func (c *converter) reference(server, inner string, w where) (string, bool) {
	if name, ok := strings.CutPrefix(inner, "env:"); ok && (c.format == VSCode || c.format == Cursor) && varref.ValidName(name) {
		return name, true
	}
	if id, ok := strings.CutPrefix(inner, "input:"); ok && c.format == VSCode && id != "" {
		name := VarName(id)
		c.note(server, fmt.Sprintf("%s: VS Code's input %q becomes ${%s}: set %s in colibri's environment", w.key, id, name, name))
		return name, true
	}
	if varref.ValidName(inner) {
		return inner, true
	}
	return "", false
}

// secretValue translates an env or header value and moves a literal secret out of
// it: the value becomes ${name} and Moved lists it.
func (c *converter) secretValue(e *Entry, v string, w where, secret bool, name, from string) string {
	out, refers := c.translate(e.Name, v, w)
	if !secret || refers || v == "" {
		return out
	}
	c.res.Moved = append(c.res.Moved, Moved{Name: name, Server: e.Name, From: from, value: v})
	return "${" + name + "}"
}

// separateSecrets gives different variables to different secrets that
// would share a name (two servers' API_KEY): each server's becomes
// SERVER_API_KEY (numbered, should that be taken too). The same secret under
// one name stays shared.
func (c *converter) separateSecrets() {
	values := map[string]map[string]bool{} // name → the values moved under it
	for _, m := range c.res.Moved {
		if values[m.Name] == nil {
			values[m.Name] = map[string]bool{}
		}
		values[m.Name][m.value] = true
	}
	taken := map[string]string{} // name → the value it holds now
	for i := range c.res.Moved {
		m := &c.res.Moved[i]
		base := m.Name
		if len(values[m.Name]) > 1 {
			base = VarName(m.Server, m.Name)
		}
		name := base
		for n := 2; ; n++ {
			if v, ok := taken[name]; !ok || v == m.value {
				break
			}
			name = fmt.Sprintf("%s_%d", base, n)
		}
		taken[name] = m.value
		if name != m.Name {
			c.rename(m, name)
		}
	}
}

// rename points the moved secret's entry at a new variable.
func (c *converter) rename(m *Moved, name string) {
	old := "${" + m.Name + "}"
	for _, e := range c.res.Entries {
		if e.Name != m.Server {
			continue
		}
		switch {
		case strings.HasPrefix(m.From, "env "):
			if k := strings.TrimPrefix(m.From, "env "); e.Env[k] == old {
				e.Env[k] = "${" + name + "}"
			}
		case strings.HasPrefix(m.From, "header "):
			if k := strings.TrimPrefix(m.From, "header "); e.Headers[k] == old {
				e.Headers[k] = "${" + name + "}"
			}
		case m.From == "bearer_token":
			e.BearerToken = "${" + name + "}"
		}
	}
	m.Name = name
}

// argSecrets notes arguments that look like secrets: colibri passes argv as
// it is, so they stay in the registry; the note says so without the value,
// and the preview hides them.
func (c *converter) argSecrets(e *Entry) {
	for i, a := range e.Args {
		flag, hasValue := "", false
		if name, _, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") {
			flag, hasValue = name, true
		} else if i > 0 && strings.HasPrefix(e.Args[i-1], "-") && !strings.HasPrefix(a, "-") && !strings.Contains(e.Args[i-1], "=") {
			flag, hasValue = e.Args[i-1], true
		}
		switch {
		case hasValue && SecretName(strings.TrimLeft(flag, "-")):
			c.note(e.Name, fmt.Sprintf("args/%d looks like a secret (the value of %s): it stays in the registry as it is, because colibri passes argv unchanged; if the server can read it from a variable, pass it through env instead", i, flag))
			if strings.HasPrefix(a, flag+"=") {
				e.hide(fmt.Sprintf("args/%d", i), flag+"="+hidden)
			} else {
				e.hide(fmt.Sprintf("args/%d", i), hidden)
			}
		case credentials(a):
			c.note(e.Name, fmt.Sprintf("args/%d is a URL with a password or a secret-looking query parameter: it stays in the registry as it is, because colibri passes argv unchanged; if the server can read it from a variable, pass it through env instead", i))
			e.hide(fmt.Sprintf("args/%d", i), maskURL(a))
		}
	}
}

// urlSecrets notes the credentials in a remote server's URL, a password
// (https://user:pass@…) or a query parameter that looks like a secret
// (https://…/mcp?api_key=…), without the value; the preview hides them.
func (c *converter) urlSecrets(e *Entry) {
	u, err := url.Parse(e.URL)
	if err != nil {
		return
	}
	if _, ok := u.User.Password(); ok {
		c.note(e.Name, "the url holds a user name and password: they stay in the registry as they are; prefer a header (Authorization) with ${NAME}")
	}
	for _, k := range slices.Sorted(maps.Keys(u.Query())) {
		if SecretName(k) {
			c.note(e.Name, fmt.Sprintf("the url's query parameter %q looks like a secret: it stays in the registry as it is; prefer a header or bearer_token with ${NAME}", k))
		}
	}
	if credentials(e.URL) {
		e.hide("url", maskURL(e.URL))
	}
}

// credentials reports whether a value is a URL that holds a credential its
// name may not tell: a password (postgres://me:pass@host/db, the commonest
// way to give a database server its login) or a query parameter whose name
// looks secret (?api_key=…), with a value.
func credentials(v string) bool {
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return false
	}
	if p, ok := u.User.Password(); ok && p != "" {
		return true
	}
	for k, vs := range u.Query() {
		if SecretName(k) && slices.ContainsFunc(vs, func(v string) bool { return v != "" }) {
			return true
		}
	}
	return false
}

// hidden stands for a secret in import's preview.
const hidden = "<hidden>"

// maskURL is v with its password and secret-looking query values hidden.
func maskURL(v string) string {
	u, err := url.Parse(v)
	if err != nil {
		return hidden
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), hidden)
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			k, _, _ := strings.Cut(p, "=")
			if name, err := url.QueryUnescape(k); err == nil && SecretName(name) {
				parts[i] = k + "=" + hidden
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	return strings.ReplaceAll(u.String(), url.PathEscape(hidden), hidden)
}
