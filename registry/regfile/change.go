package regfile

// The changes the command line makes: init's starter registry, add's one
// entry, remove's one name, import's many entries.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf"
	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Entry is what add writes, keys in the registry's documented order.
type Entry struct {
	Command     string            `json:"command,omitempty"`
	URL         string            `json:"url,omitempty"`
	Transport   string            `json:"transport,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	BearerToken string            `json:"bearer_token,omitempty"`
	// A remote's opt-ins: plain HTTP beyond loopback, OAuth discovery on
	// private addresses.
	AllowHTTP           bool     `json:"allow_http,omitempty"`
	AllowPrivateNetwork bool     `json:"allow_private_network,omitempty"`
	Cwd                 string   `json:"cwd,omitempty"`
	Description         string   `json:"description,omitempty"`
	Lifecycle           string   `json:"lifecycle,omitempty"`
	Sandbox             *Sandbox `json:"sandbox,omitempty"`
	Spare               int      `json:"spare,omitempty"`
	PassEnv             []string `json:"pass_env,omitempty"`
	// Source is where add --from-registry took the entry from.
	Source *registry.Source `json:"source,omitempty"`
}

// Sandbox is the "sandbox" add writes: Net is false, a list of
// destinations, or nil (the network, the default).
type Sandbox struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	Net   any      `json:"net,omitempty"`
}

// HintsFor are Hints for e, less those e follows already (a spare, a
// pass_env) or cannot (a spare for a persistent entry).
func HintsFor(e *Entry) []string {
	var out []string
	for _, h := range Hints(e.Command) {
		switch {
		case (e.Spare > 0 || e.Lifecycle == registry.Persistent) && strings.Contains(h, `"spare"`), len(e.PassEnv) > 0 && strings.Contains(h, `"pass_env"`):
			continue
		}
		out = append(out, h)
	}
	return out
}

// Add sets the server name to e in the registry at path (replacing one of
// that name only with replace), as Edit does.
func Add(path, name string, e *Entry, replace bool) (backup string, err error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	return Edit(path, func(old []byte) ([]byte, error) {
		return AddServer(old, name, raw, replace)
	})
}

// Holds reports whether the registry at path has an entry called name (a
// registry that does not read has none).
func Holds(path, name string) bool {
	reg, err := registry.Load(path)
	if err != nil {
		return false
	}
	_, ok := reg.Servers[name]
	return ok
}

// Remove takes the server name out of the registry at path, as Edit does.
// A registry that is not there is fs.ErrNotExist.
func Remove(path, name string) (backup string, err error) {
	return Edit(path, func(old []byte) ([]byte, error) {
		if old == nil {
			return nil, fmt.Errorf("%s: %w (colibri-mcp init writes one)", path, fs.ErrNotExist)
		}
		return RemoveServer(old, name)
	})
}

// Named is one entry of AddAll: a name and its JSON object.
type Named struct {
	Name  string
	Entry json.RawMessage
}

// AddAll adds entries to the registry at path, entry by entry as add does
// (the registry's own text is kept), in one Edit. A name the registry has
// already is kept as it is, never overwritten: it is listed in kept, the
// others in added. With nothing to add, nothing is written.
func AddAll(path string, entries []Named) (added, kept []string, backup string, err error) {
	backup, err = Edit(path, func(old []byte) ([]byte, error) {
		doc := old
		added, kept = nil, nil
		for _, e := range entries {
			next, err := AddServer(doc, e.Name, e.Entry, false)
			switch {
			case errors.Is(err, ErrExists):
				kept = append(kept, e.Name)
				continue
			case err != nil:
				return nil, err
			}
			doc = next
			added = append(added, e.Name)
		}
		if len(added) == 0 {
			return nil, nil
		}
		return doc, nil
	})
	return added, kept, backup, err
}

// Starter is init's registry: no server, or the demo server at demo.
func Starter(demo string) ([]byte, error) {
	doc := []byte("{\n  \"servers\": {}\n}\n")
	if demo == "" {
		return doc, nil
	}
	raw, _ := json.Marshal(map[string]string{"command": demo, "description": "colibri's demo server: echo, add, slow (progress), fail (isError)."})
	return AddServer(doc, "demo", raw, false)
}

// InstalledDemo is the demo server installed beside colibri (self, its
// executable), for init's starter registry: make install's
// libexec/colibri-mcp/, or make build's bin/; "" when there is none.
func InstalledDemo(self string) string {
	dir := filepath.Dir(self)
	for _, p := range []string{
		filepath.Join(dir, "..", "libexec", "colibri-mcp", "demo-mcp-server"),
		filepath.Join(dir, "demo-mcp-server"),
	} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return filepath.Clean(p)
		}
	}
	return ""
}

// ErrFileExists is a registry init would replace without force.
var ErrFileExists = errors.New("the registry exists already")

// Init writes doc as the registry at path: a file there is ErrFileExists,
// unless force, and then it is kept as FILE.bak. A link stays a link: the
// file it points to is replaced. It returns the backup's name ("" when
// none).
func Init(path string, doc []byte, force bool) (backup string, err error) {
	target := path
	if t, err := filepath.EvalSymlinks(path); err == nil {
		target = t
	}
	old, mode, err := safefile.ReadWithMode(target, registry.MaxFileSize)
	if err != nil {
		return "", err
	}
	if old != nil && !force {
		return "", ErrFileExists
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return "", err
	}
	if old != nil {
		if backup, err = safefile.Backup(target, old, mode); err != nil {
			return "", fmt.Errorf("keeping %s: %w: nothing written", backup, err)
		}
	} else {
		mode = 0o644
	}
	if err := safefile.Replace(target, doc, mode, old); err != nil {
		if backup != "" {
			os.Remove(backup)
		}
		return "", err
	}
	return backup, nil
}

// Explain is a refused or failed change as the command cmd reports it, and
// whether it is the person's to fix (an invalid registry, a name it has or
// lacks, no registry: a usage error) rather than a write that failed, which
// says that nothing was written.
func Explain(cmd string, err error) (said error, persons bool) {
	var re *registry.Error
	var ue *UnknownServerError
	switch {
	case errors.As(err, &re), errors.As(err, &ue), errors.Is(err, ErrExists), errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w", cmd, err), true
	case errors.Is(err, safefile.ErrChanged), strings.Contains(err.Error(), "nothing written"):
		return fmt.Errorf("%s: %w", cmd, err), false
	}
	return fmt.Errorf("%s: %w: nothing written", cmd, err), false
}

// LiteralSecrets refuses an env or header entry of e whose name looks
// secret (editorconf.SecretName) and whose value is a literal, not a
// ${NAME} reference nor an absolute path, when the registry at path is, or
// would be created, readable by others: the secret would lie there in
// clear. The value is never shown. A registry of mode 0600 may hold one.
func LiteralSecrets(path string, e *Entry) error {
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 == 0 {
		return nil
	}
	for _, f := range []struct {
		flag string
		m    map[string]string
	}{{"env", e.Env}, {"header", e.Headers}} {
		for _, k := range slices.Sorted(maps.Keys(f.m)) {
			// A path names where a secret lies (GOOGLE_APPLICATION_CREDENTIALS,
			// PASSWORD_FILE): it is not one.
			if v := f.m[k]; v != "" && !strings.Contains(v, "${") && !filepath.IsAbs(v) && editorconf.SecretName(k) {
				ref := editorconf.VarName(k)
				return fmt.Errorf("--%s %s holds a literal secret, which would lie in clear in %s (readable by others): "+
					"write --%s '%s=${%s}' and set %s where colibri runs ('colibri-mcp --env-file F' loads it from a mode-0600 file), or make the registry mode 0600 first",
					f.flag, k, path, f.flag, k, ref, ref)
			}
		}
	}
	return nil
}

// Hints are what a server started by a package runner or an interpreter is
// better with: a process kept ready (its start is slow), and for npx and
// uvx the proxy, CA and package-manager settings the explicit environment
// leaves out.
func Hints(command string) []string {
	base := strings.TrimSuffix(filepath.Base(command), ".exe")
	var hints []string
	if slices.Contains([]string{"npx", "uvx", "node", "python", "python3", "bunx", "deno"}, base) {
		hints = append(hints, fmt.Sprintf(`%s starts slowly (hundreds of milliseconds): "spare": 1 in the entry (add --spare 1) keeps one process ready for the next request`, base))
	}
	if h := PassEnvHint(command); h != "" {
		hints = append(hints, h+" (add --pass-env NAME for each)")
	}
	return hints
}

// PassEnvHint is what an npx or uvx entry is told of pass_env: the
// settings its package manager reads (npm's for npx, uv's for uvx), which
// the explicit environment leaves out; "" for another command.
func PassEnvHint(command string) string {
	base := strings.TrimSuffix(filepath.Base(command), ".exe")
	var names string
	switch base {
	case "npx":
		names = `"HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "npm_config_*"`
	case "uvx":
		names = `"HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "SSL_CERT_FILE", "UV_*"`
	default:
		return ""
	}
	return fmt.Sprintf(`%s needs the proxy, CA and package settings colibri does not pass by default: "pass_env": [%s]`, base, names)
}

// AddArgs are add's arguments as given: NAME and the command after it,
// and the flags.
type AddArgs struct {
	Args           []string // NAME [COMMAND [ARGS…]]
	URL            string
	Env, Headers   []string // K=V
	BearerTokenEnv string   // the NAME of the variable that holds the token
	Persistent     bool
	// A remote's opt-ins (allow_http, allow_private_network).
	AllowHTTP, AllowPrivateNetwork bool
	// A command's: its working directory, description, spares, the
	// variables passed as they are, and its sandbox: Read and Write
	// grants, NoNet, Net destinations; Sandbox alone confines it with
	// the defaults. NetList says the registry takes a list in net.
	Cwd, Description string
	Spare            int
	PassEnv          []string
	Read, Write, Net []string
	NoNet, Sandbox   bool
	NetList          bool
}

// NewEntry is the entry add writes, and its name; an error says which
// argument is wrong (never a value that may be a secret). A command with a
// slash is made absolute: it was typed relative to the folder add runs in,
// and the registry would resolve it against its own folder.
func NewEntry(a AddArgs) (string, *Entry, error) {
	if len(a.Args) == 0 {
		return "", nil, errors.New("needs NAME")
	}
	name, rest := a.Args[0], a.Args[1:]
	if len(name) > 64 {
		// Said without the name: the registry's message would repeat all of
		// it, twice.
		return "", nil, fmt.Errorf("NAME is %d bytes long: at most 64 (letters, digits, _ . -, starting with a letter or digit)", len(name))
	}
	e := &Entry{URL: a.URL}
	pairs := func(flag string, kvs []string) (map[string]string, error) {
		var m map[string]string
		for _, kv := range kvs {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--%s %q: want K=V", flag, kv)
			}
			if m == nil {
				m = map[string]string{}
			}
			m[k] = v
		}
		return m, nil
	}
	var err error
	if e.Env, err = pairs("env", a.Env); err != nil {
		return "", nil, err
	}
	if e.Headers, err = pairs("header", a.Headers); err != nil {
		return "", nil, err
	}
	if v := a.BearerTokenEnv; v != "" {
		if !upperName(v) {
			// ghp_… is a valid variable name, and would lie in the
			// registry in clear, and in every "not set" error after.
			return "", nil, errors.New("--bearer-token-env wants the NAME of the variable that holds the token, in upper case (DOCS_TOKEN), not the token: the value given (not shown) was not written")
		}
		e.BearerToken = "${" + v + "}"
	}
	switch {
	case e.URL != "" && len(rest) > 0:
		return "", nil, errors.New("give --url or -- COMMAND, not both")
	case e.URL != "":
		if e.Env != nil {
			return "", nil, errors.New("--env is for a command; a remote server takes --header")
		}
		if a.Persistent {
			return "", nil, errors.New("a remote server keeps one session already (--persistent is for commands)")
		}
		if h := registry.PlainHTTPHost(e.URL); h != "" && !a.AllowHTTP {
			return "", nil, fmt.Errorf("--url: plain http to %s would send requests (and any token) in clear: use https, or add --allow-http", h)
		}
		e.AllowHTTP, e.AllowPrivateNetwork = a.AllowHTTP, a.AllowPrivateNetwork
	case len(rest) == 0:
		return "", nil, errors.New("give the server's command after --, or --url URL")
	default:
		if e.Headers != nil || e.BearerToken != "" || a.AllowHTTP || a.AllowPrivateNetwork {
			return "", nil, errors.New("--header, --bearer-token-env, --allow-http and --allow-private-network are for --url")
		}
		e.Command, e.Args = rest[0], rest[1:]
		if strings.Contains(e.Command, "/") && !filepath.IsAbs(e.Command) {
			if abs, err := filepath.Abs(e.Command); err == nil {
				e.Command = abs
			}
		}
		if a.Persistent {
			e.Lifecycle = registry.Persistent
		}
		if err := commandExtras(a, e); err != nil {
			return "", nil, err
		}
	}
	if e.URL != "" {
		if err := remoteRefuses(a); err != nil {
			return "", nil, err
		}
	}
	e.Description = a.Description
	return name, e, nil
}

// Extras sets on e, an entry made elsewhere (add --from-registry's), what
// add's flags give beyond the command or the URL: a command's cwd, spares,
// pass_env and sandbox (refused for a remote entry), and the description
// when one is given (else e keeps its own). A flag is never dropped
// silently: a sandbox asked for and not written would leave the server
// unconfined while its user believes it confined.
func Extras(a AddArgs, e *Entry) error {
	if e.URL != "" {
		if err := remoteRefuses(a); err != nil {
			return err
		}
		e.AllowHTTP = e.AllowHTTP || a.AllowHTTP
		e.AllowPrivateNetwork = e.AllowPrivateNetwork || a.AllowPrivateNetwork
	} else if a.AllowHTTP || a.AllowPrivateNetwork {
		return errors.New("--allow-http and --allow-private-network are for a remote server")
	} else if err := commandExtras(a, e); err != nil {
		return err
	}
	if a.Description != "" {
		e.Description = a.Description
	}
	return nil
}

// remoteRefuses refuses the flags of a command for a remote server.
func remoteRefuses(a AddArgs) error {
	for _, f := range []struct {
		set  bool
		flag string
	}{{a.Cwd != "", "--cwd is"}, {a.Spare > 0, "--spare is"}, {len(a.PassEnv) > 0, "--pass-env is"},
		{a.Sandbox || a.NoNet || len(a.Read)+len(a.Write)+len(a.Net) > 0, "--sandbox, --read, --write, --net and --no-net are"}} {
		if f.set {
			return fmt.Errorf("%s for a command: colibri starts no process for a remote server", f.flag)
		}
	}
	return nil
}

// abs is p made absolute from the folder add runs in (the registry would
// read a relative one against its own folder); ~ and ~/… are left for the
// registry, which reads them as colibri's HOME.
func abs(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") || filepath.IsAbs(p) {
		return p
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// commandExtras sets a command entry's cwd, spares, pass_env and sandbox.
func commandExtras(a AddArgs, e *Entry) error {
	if a.Cwd != "" {
		e.Cwd = abs(a.Cwd)
	}
	if a.Spare < 0 || a.Spare > 4 {
		return fmt.Errorf("--spare %d: 0 to 4", a.Spare)
	}
	if a.Spare > 0 && a.Persistent {
		return errors.New("--spare is for a process per request; --persistent keeps one warm session instead")
	}
	e.Spare = a.Spare
	for _, n := range a.PassEnv {
		if n == "" || strings.Contains(n, "=") {
			return fmt.Errorf("--pass-env %q: give a variable's NAME (globs allowed: npm_config_*), not NAME=VALUE: its value is passed as colibri has it", n)
		}
	}
	e.PassEnv = a.PassEnv
	if a.NoNet && len(a.Net) > 0 {
		return errors.New("give --no-net or --net DEST, not both")
	}
	if !a.Sandbox && !a.NoNet && len(a.Read)+len(a.Write)+len(a.Net) == 0 {
		return nil
	}
	sb := &Sandbox{}
	for _, p := range a.Read {
		sb.Read = append(sb.Read, abs(p))
	}
	for _, p := range a.Write {
		sb.Write = append(sb.Write, abs(p))
	}
	switch {
	case a.NoNet:
		sb.Net = false
	case len(a.Net) > 0 && !a.NetList:
		return errors.New("--net DEST: this colibri's sandbox allows the network whole or not at all (--no-net turns it off)")
	case len(a.Net) > 0:
		sb.Net = a.Net
	}
	e.Sandbox = sb
	return nil
}

// upperName reports whether s is a variable name in upper case, as the
// variables that hold tokens are named: [A-Z_][A-Z0-9_]*.
func upperName(s string) bool {
	for i, r := range s {
		if !(r >= 'A' && r <= 'Z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}
