// Package registry reads colibri-mcp's registry of hosted MCP servers: the
// JSON file (by default /usr/local/etc/colibri/external-mcp.json) that names
// each server, its command, arguments, environment and confinement.
//
// The file is validated against a JSON Schema (draft 2020-12) embedded in the
// binary, so that every mistake is reported with the file, the JSON location
// and what was expected:
//
//	reg, err := registry.Load("/usr/local/etc/colibri/external-mcp.json")
//	if err != nil {
//		return err // e.g. external-mcp.json: /servers/demo/args/1: got number, want string
//	}
//	srv, ok := reg.Servers["demo"]
//
// Environment values may refer to colibri's own variables as ${NAME}; they are
// expanded only when a server is started ([Server.ExpandEnv]), so that a
// missing variable fails that server alone.
package registry

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/colibri-mcp/colibri-mcp/internal/schema"
	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
	"github.com/colibri-mcp/colibri-mcp/policy"
)

// DefaultPath is where the registry lives on a FreeBSD system.
const DefaultPath = "/usr/local/etc/colibri/external-mcp.json"

// Lifecycles of a hosted server.
const (
	PerRequest = "per_request" // a fresh process for every request (default)
	Persistent = "persistent"  // one warm session, reused and restarted
)

// DefaultIdleTimeout closes a persistent server's warm session after this
// long unused, and stops a per_request server's spares after this long
// without requests.
const DefaultIdleTimeout = 5 * time.Minute

// MaxSpare bounds "spare": started processes kept ready per server.
const MaxSpare = 4

// Schema is the registry's JSON Schema, as shipped in docs/registry.schema.json.
//
//go:embed registry.schema.json
var Schema []byte

// Registry is a parsed, validated registry file.
type Registry struct {
	// Path is the file the registry was read from ("" when parsed from a reader
	// without a name).
	Path    string
	Servers map[string]*Server
	// Policy is the top-level "policy": it applies to every server,
	// together with each server's own (CONTRACT.md section 9).
	Policy *policy.Policy
	// Sandbox is the top-level "sandbox", every command entry's default.
	Sandbox *Sandbox
	// Pin is the top-level "pin": every server's default (CONTRACT.md
	// section 13); "" means PinEnforce.
	Pin string
	// PassEnv is the top-level "pass_env", every entry's default.
	PassEnv []string
}

// The values of "pin" (CONTRACT.md section 13).
const (
	PinEnforce = "enforce"
	PinWarn    = "warn"
	PinOff     = "off"
)

// PinMode is what a change in srv's tool definitions does: its own "pin",
// else the top-level one, else PinEnforce.
func (r *Registry) PinMode(srv *Server) string {
	mode := r.Pin
	if srv != nil && srv.Pin != "" {
		mode = srv.Pin
	}
	switch mode {
	case PinWarn, PinOff:
		return mode
	}
	return PinEnforce // also for a value the schema would refuse, in a registry built in code
}

// Rules are the policies that apply to srv's tools: the top-level one and
// srv's own.
func (r *Registry) Rules(srv *Server) policy.Rules {
	return policy.Rules{Global: r.Policy, Server: srv.Name, Local: srv.Policy}
}

// Names returns the server names in sorted order.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.Servers))
	for name := range r.Servers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Server is one hosted MCP server. Durations are zero when the file leaves
// them unset; callers apply colibri's defaults.
type Server struct {
	Name        string            `json:"-"`
	Command     string            `json:"command"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Cwd         string            `json:"cwd,omitempty"`
	TimeoutMS   int64             `json:"timeout_ms,omitempty"`
	CallTimeout int64             `json:"call_timeout_ms,omitempty"`
	Description string            `json:"description,omitempty"`
	Lifecycle   string            `json:"lifecycle,omitempty"`
	IdleMS      int64             `json:"idle_timeout_ms,omitempty"`
	Jail        *Jail             `json:"jail,omitempty"`
	// Sandbox is the Linux confinement that applies (sandbox.go).
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	// ToolPrefix names this server's tools in aggregate mode (PREFIX__TOOL);
	// "" means the server name ([Server.Prefix]).
	ToolPrefix string `json:"tool_prefix,omitempty"`
	// Policy is the server's own "policy". It is decoded on its own (Parse)
	// and left out of the entry's JSON, which fingerprints the entry: a
	// policy edit applies at once, and restarts no warm process.
	Policy *policy.Policy `json:"-"`

	// KeepaliveMS is how often an idle warm session is pinged; nil means
	// the default, 0 turns pings off.
	KeepaliveMS *int64 `json:"keepalive_ms,omitempty"`

	// Spare is how many started processes of a per_request server colibri
	// keeps ready, nothing sent to them, so that a request skips the start
	// (CONTRACT.md section 15); 0 keeps none.
	Spare int `json:"spare,omitempty"`

	// A remote server (CONTRACT.md section 3, "Remote servers"): URL is set
	// instead of Command.
	URL       string `json:"url,omitempty"`
	Transport string `json:"transport,omitempty"` // TransportStreamable (default), TransportSSE, TransportAuto
	// Headers are sent with every request; values may hold ${NAME}.
	Headers map[string]string `json:"headers,omitempty"`
	// BearerToken is sent as "Authorization: Bearer …"; may hold ${NAME}.
	BearerToken         string `json:"bearer_token,omitempty"`
	OAuth               *OAuth `json:"oauth,omitempty"`
	AllowHTTP           bool   `json:"allow_http,omitempty"`
	AllowPrivateNetwork bool   `json:"allow_private_network,omitempty"`

	// Pin is the server's own "pin" (replacing the top-level one); ""
	// means the top-level one. It is left out of the entry's JSON, as
	// Policy is: a change of it restarts nothing.
	Pin string `json:"-"`
	// PassEnv names colibri's variables (globs allowed) passed to the child
	// as they are; the top-level one when the entry has none.
	PassEnv []string `json:"pass_env,omitempty"`
	// Source is where the entry came from: the MCP Registry entry and the
	// exact version add --from-registry wrote (docs/registry.md). A plain
	// field of the entry's JSON, so that the fingerprint of a definition
	// holds the release it was pinned from.
	Source *Source `json:"source,omitempty"`
	// Dir is the registry file's folder: a command entry's working
	// directory when it names no cwd ("" for a registry without a file).
	Dir string `json:"-"`
}

// Source is an entry's origin in an MCP Registry: the registry's URL, the
// server's name there (io.github.owner/server) and the exact version.
type Source struct {
	Registry string `json:"registry"`
	Name     string `json:"name"`
	Version  string `json:"version"`
}

// String is the origin as one reads it: NAME@VERSION from REGISTRY.
func (s *Source) String() string {
	return s.Name + "@" + s.Version + " from " + s.Registry
}

// Transports of a remote server.
const (
	TransportStreamable = "streamable_http"
	TransportSSE        = "sse"
	TransportAuto       = "auto"
)

// OAuth grants.
const (
	GrantClientCredentials = "client_credentials"
	GrantAuthorizationCode = "authorization_code"
)

// OAuth is a remote server's "oauth" object.
type OAuth struct {
	Grant        string   `json:"grant"`
	ClientID     string   `json:"client_id,omitempty"`
	ClientSecret string   `json:"client_secret,omitempty"` // may hold ${NAME}
	Scopes       []string `json:"scopes,omitempty"`
	Resource     string   `json:"resource,omitempty"`
	TokenFile    string   `json:"token_file,omitempty"`
	// Issuer pins the authorization server: discovery that names another
	// is refused and nothing is sent to it.
	Issuer string `json:"issuer,omitempty"`
}

// Jail is the FreeBSD confinement of a server: either an existing jail (Name)
// or an ephemeral one created for each process (Path).
type Jail struct {
	Name     string `json:"name,omitempty"`
	Path     string `json:"path,omitempty"`
	RootPath string `json:"root_path,omitempty"`
	User     string `json:"user,omitempty"`
	IP4      string `json:"ip4,omitempty"`
}

// MaxMillis is the largest value of every *_ms key: 24 hours. The schema
// and Validate refuse more; the accessors below cap at it, so that a
// registry built in code never overflows into a tiny or negative duration.
const MaxMillis = 24 * 60 * 60 * 1000

// Millis converts a count of milliseconds from the registry to a duration,
// capped at MaxMillis (a plain time.Duration(ms) * time.Millisecond wraps
// around past 2^63 ns, about 106 days).
func Millis(ms int64) time.Duration {
	return time.Duration(min(ms, MaxMillis)) * time.Millisecond
}

// Timeout is the server's timeout for initialize and tools/list, or def when
// the file sets none.
func (s *Server) Timeout(def time.Duration) time.Duration {
	if s.TimeoutMS > 0 {
		return Millis(s.TimeoutMS)
	}
	return def
}

// CallTimeoutOr is the server's timeout for tools/call: call_timeout_ms, else
// timeout_ms, else def.
func (s *Server) CallTimeoutOr(def time.Duration) time.Duration {
	if s.CallTimeout > 0 {
		return Millis(s.CallTimeout)
	}
	return s.Timeout(def)
}

// IdleTimeout is how long a persistent server's warm session may stay unused.
func (s *Server) IdleTimeout() time.Duration {
	if s.IdleMS > 0 {
		return Millis(s.IdleMS)
	}
	return DefaultIdleTimeout
}

// Prefix is the prefix of the server's tools in aggregate mode: tool_prefix,
// or the server name.
func (s *Server) Prefix() string {
	if s.ToolPrefix != "" {
		return s.ToolPrefix
	}
	return s.Name
}

// ProcessKey fingerprints what in the entry decides the process it starts,
// and so the tools it lists: all of it but its description, tool_prefix and
// spare, which change only how colibri shows or keeps the server (and its policy, which is
// not in an entry's JSON). Two entries with the same key are the same
// server: an edit that keeps it restarts nothing and reads nothing again.
func (s *Server) ProcessKey() string {
	cp := *s
	cp.Description, cp.ToolPrefix = "", ""
	cp.Spare = 0 // how many are kept ready changes no process
	b, _ := json.Marshal(&cp)
	return s.Name + "\x00" + string(b)
}

// IsPersistent reports whether the server keeps a warm session: with
// "lifecycle": "persistent", which is the default of url entries.
func (s *Server) IsPersistent() bool {
	return s.Lifecycle == Persistent || s.Lifecycle == "" && s.URL != ""
}

// IsRemote reports whether the server is reached over HTTP (a url entry).
func (s *Server) IsRemote() bool { return s.URL != "" }

// PingInterval is how often an idle warm session is pinged: keepalive_ms,
// else def; 0 means never.
func (s *Server) PingInterval(def time.Duration) time.Duration {
	if s.KeepaliveMS != nil {
		return Millis(*s.KeepaliveMS)
	}
	return def
}

// EnvKeys returns the names of the server's own environment variables, sorted.
// Their values are never shown.
func (s *Server) EnvKeys() []string {
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Load reads and validates the registry file at path. It reads a regular
// file only, of at most MaxFileSize bytes: a FIFO, a device or a directory
// at path is refused at once, never waited on.
func Load(path string) (*Registry, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}

// openRegular opens path for reading if it is a regular file. The file is
// opened with O_NONBLOCK, so that a FIFO with no writer (perhaps swapped in
// after a stat) cannot block the open, and then checked with fstat on the
// descriptor itself: what is read is what was checked.
func openRegular(path string) (*os.File, error) {
	fail := func(err error) (*os.File, error) {
		return nil, &Error{File: path, Problems: []Problem{{Message: readProblem(err)}}, Err: err}
	}
	// Stat first: opening a device can have effects of its own (a terminal
	// may become the controlling one), so only what looks regular is opened.
	st, err := os.Stat(path)
	if err == nil {
		err = regular(st)
	}
	if err != nil {
		return fail(err)
	}
	f, err := openChecked(path)
	if err != nil {
		return fail(err)
	}
	return f, nil
}

// openChecked opens path without blocking and keeps it only if the open
// descriptor is a regular file of at most MaxFileSize bytes.
func openChecked(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = regular(st)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// errNotRegular is a registry path that names something other than a
// regular file.
var errNotRegular = errors.New("not a regular file")

func regular(st os.FileInfo) error {
	switch {
	case st.Mode().IsRegular():
	case st.IsDir():
		return fmt.Errorf("%w: it is a directory", errNotRegular)
	case st.Mode()&os.ModeNamedPipe != 0:
		return fmt.Errorf("%w: it is a FIFO, which colibri never reads (it could block every request)", errNotRegular)
	default:
		return fmt.Errorf("%w: its mode is %s", errNotRegular, st.Mode().Type())
	}
	if st.Size() > MaxFileSize {
		return fmt.Errorf("%w: %d bytes, more than the limit of %d", errTooLarge, st.Size(), MaxFileSize)
	}
	return nil
}

var errTooLarge = errors.New("the registry file is too large")

func readProblem(err error) string {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return missingProblem(nil)
	case errors.Is(err, os.ErrPermission):
		return "the registry file cannot be read: permission denied"
	case errors.Is(err, errNotRegular):
		return "the registry path is " + err.Error()
	case errors.Is(err, errTooLarge):
		return err.Error()
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return "reading the registry file: " + pe.Err.Error()
	}
	return "reading the registry file: " + err.Error()
}

// MaxFileSize bounds what Parse reads (4 MiB): a registry is a few
// kilobytes, and a hostile or mistaken file must not exhaust memory.
const MaxFileSize = 4 << 20

// Parse reads a registry from r. path names the file in errors and is the
// folder that relative commands resolve against; it may be "" for a reader
// with no file behind it, and then relative commands resolve against the
// working directory.
func Parse(r io.Reader, path string) (*Registry, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, &Error{File: path, Problems: []Problem{{Message: "reading the registry: " + err.Error()}}, Err: err}
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: path, Problems: []Problem{{Message: fmt.Sprintf("the registry is larger than %d bytes", MaxFileSize)}}}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, &Error{File: path, Problems: []Problem{{Message: syntaxProblem(data, err)}}, Err: err}
	}
	if dups := duplicateKeys(data); len(dups) > 0 {
		return nil, &Error{File: path, Problems: dups}
	}
	if err := compiled.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, &Error{File: path, Problems: []Problem{{Message: err.Error()}}, Err: err}
		}
		problems := append(nameProblems(doc), schemaProblems(ve, true)...)
		slices.SortStableFunc(problems, func(a, b Problem) int { return strings.Compare(a.Location, b.Location) })
		if shape := editorShape(doc); shape != "" {
			problems = append([]Problem{{Message: fmt.Sprintf("this looks like an editor's MCP configuration (%s), not a colibri registry: `colibri-mcp import` converts one into registry entries", shape)}}, problems...)
		}
		return nil, &Error{File: path, Problems: problems}
	}

	var file struct {
		Servers map[string]*Server `json:"servers"`
		Policy  *policy.Policy     `json:"policy"`
		Sandbox *Sandbox           `json:"sandbox"`
		Pin     string             `json:"pin"`
		PassEnv []string           `json:"pass_env"`
	}
	var policies struct {
		Servers map[string]struct {
			Policy *policy.Policy `json:"policy"`
			Pin    string         `json:"pin"`
		} `json:"servers"`
	}
	err = json.Unmarshal(data, &file)
	if err == nil {
		err = json.Unmarshal(data, &policies)
	}
	if err != nil {
		// The schema accepted the document, so this is a mismatch between the
		// schema and the Go types: a bug of ours, reported as such.
		return nil, &Error{File: path, Problems: []Problem{{Message: "internal: decoding a valid registry: " + err.Error()}}, Err: err}
	}
	reg := &Registry{Path: path, Servers: file.Servers, Policy: file.Policy, Sandbox: file.Sandbox, Pin: file.Pin, PassEnv: file.PassEnv}
	if reg.Servers == nil {
		reg.Servers = map[string]*Server{}
	}
	for name, s := range reg.Servers {
		s.Name = name
		s.Policy = policies.Servers[name].Policy
		s.Pin = policies.Servers[name].Pin
		if s.PassEnv == nil {
			s.PassEnv = file.PassEnv
		}
		s.resolve(path)
		s.applySandbox(file.Sandbox, registryDir(path))
	}
	if err := reg.Validate(); err != nil {
		return nil, err
	}
	return reg, nil
}

// resolve makes a relative command (one with a "/") and a relative cwd
// absolute, against the folder of the registry file. A jailed server's
// paths are inside the jail and stay as they are.
func (s *Server) resolve(file string) {
	if s.Jail != nil {
		return
	}
	dir := "."
	if file != "" {
		dir = filepath.Dir(file)
		if abs, err := filepath.Abs(dir); err == nil && s.URL == "" {
			s.Dir = abs
		}
	}
	if !filepath.IsAbs(s.Command) && strings.Contains(s.Command, "/") {
		if abs, err := filepath.Abs(filepath.Join(dir, s.Command)); err == nil {
			s.Command = abs
		}
	}
	if s.Cwd != "" && !filepath.IsAbs(s.Cwd) {
		if abs, err := filepath.Abs(filepath.Join(dir, s.Cwd)); err == nil {
			s.Cwd = abs
		}
	}
}

// Validate checks the rules a JSON Schema cannot state clearly, for every
// server; Parse calls it, and a registry built in code should too.
func (r *Registry) Validate() error {
	problems := policyProblems("/policy", r.Policy)
	problems = append(problems, passEnvProblems("/pass_env", r.PassEnv)...)
	for _, name := range r.Names() {
		s := r.Servers[name]
		if !validName(name) {
			problems = append(problems, Problem{Location: "/servers/" + escapePointer(name), Message: fmt.Sprintf("the name %q is not allowed: want %s", name, namePattern)})
		}
		switch {
		case s.Command == "" && s.URL == "":
			problems = append(problems, Problem{Location: "/servers/" + escapePointer(name) + "/command", Message: `is required (or "url", for a remote server)`})
		case s.Command != "" && s.URL != "":
			problems = append(problems, Problem{Location: "/servers/" + escapePointer(name), Message: `give "command" (a local server) or "url" (a remote one), not both`})
		}
		problems = append(problems, s.problems()...)
		problems = append(problems, policyProblems("/servers/"+escapePointer(name)+"/policy", s.Policy)...)
		if !slices.Equal(s.PassEnv, r.PassEnv) { // the top-level one is checked once
			problems = append(problems, passEnvProblems("/servers/"+escapePointer(name)+"/pass_env", s.PassEnv)...)
		}
	}
	problems = append(problems, r.prefixProblems()...)
	problems = append(problems, r.topSandboxProblems()...)
	problems = onceEach(problems) // a top-level sandbox's problem, met through each entry
	if len(problems) > 0 {
		return &Error{File: r.Path, Problems: problems}
	}
	return nil
}

// prefixProblems refuses a tool_prefix that breaks its pattern, or that
// another server's tools already use: the two servers' tools would then
// meet in one namespace, and every name they share would need a hash.
func (r *Registry) prefixProblems() []Problem {
	var ps []Problem
	users := map[string][]string{} // prefix -> the servers that use it
	for _, name := range r.Names() {
		users[r.Servers[name].Prefix()] = append(users[r.Servers[name].Prefix()], name)
	}
	for _, name := range r.Names() {
		p := r.Servers[name].ToolPrefix
		if p == "" {
			continue
		}
		at := "/servers/" + escapePointer(name) + "/tool_prefix"
		if !validPrefix(p) {
			ps = append(ps, Problem{Location: at, Message: fmt.Sprintf("%q is not allowed: want %s", p, prefixPattern)})
			continue
		}
		var others []string
		for _, o := range users[p] {
			if o != name {
				others = append(others, o)
			}
		}
		if len(others) > 0 {
			ps = append(ps, Problem{Location: at, Message: fmt.Sprintf("%q is also the tool prefix of server %s: each server's tools need a prefix of their own in aggregate mode", p, strings.Join(others, ", "))})
		}
	}
	return ps
}

// policyProblems are a policy's mistakes, at their locations under at.
func policyProblems(at string, p *policy.Policy) []Problem {
	var ps []Problem
	for _, pr := range p.Problems() {
		ps = append(ps, Problem{Location: at + pr.Location, Message: pr.Message})
	}
	return ps
}

// prefixPattern is the rule for tool_prefix, also in the schema: the
// characters of an aggregate tool name (CONTRACT.md section 4), at most 32
// of them, so that the hosted tool's own name keeps some room.
const prefixPattern = `^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`

func validPrefix(p string) bool {
	if len(p) == 0 || len(p) > 32 {
		return false
	}
	for i, c := range p {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// namePattern is the rule for server names (CONTRACT.md section 3), also in
// the schema.
const namePattern = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`

func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i, c := range name {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// problems are the server's own rule breaks.
func (s *Server) problems() []Problem {
	var ps []Problem
	at := func(key string) string { return "/servers/" + escapePointer(s.Name) + key }
	if s.Jail != nil && !filepath.IsAbs(s.Command) && strings.Contains(s.Command, "/") {
		ps = append(ps, Problem{Location: at("/command"), Message: "a jailed command must be an absolute path inside the jail or a bare name, not a relative path"})
	}
	ps = append(ps, s.controlProblems(at)...)
	if s.Cwd != "" && s.Jail != nil {
		switch {
		case s.Jail.Path != "":
			ps = append(ps, Problem{Location: at("/cwd"), Message: `"cwd" cannot go with "jail": {"path": …}: jail -c has no working directory (use "name", run with jexec -d, or pass a directory in the server's own arguments)`})
		case !strings.HasPrefix(s.Cwd, "/"):
			ps = append(ps, Problem{Location: at("/cwd"), Message: "with a jail, cwd must be an absolute path inside the jail (jexec -d CWD)"})
		}
	}
	for _, ms := range []struct {
		key string
		v   int64
	}{{"/timeout_ms", s.TimeoutMS}, {"/call_timeout_ms", s.CallTimeout}, {"/idle_timeout_ms", s.IdleMS}} {
		if ms.v < 0 || ms.v > MaxMillis {
			ps = append(ps, Problem{Location: at(ms.key), Message: fmt.Sprintf("%d is out of range: want 1 to %d (24 hours)", ms.v, MaxMillis)})
		}
	}
	if s.Lifecycle != "" && s.Lifecycle != PerRequest && s.Lifecycle != Persistent {
		ps = append(ps, Problem{Location: at("/lifecycle"), Message: fmt.Sprintf("%q: want %q or %q", s.Lifecycle, PerRequest, Persistent)})
	}
	if s.IdleMS > 0 && !s.IsPersistent() && s.Spare == 0 {
		ps = append(ps, Problem{Location: at("/idle_timeout_ms"), Message: `idle_timeout_ms applies only with "lifecycle": "persistent" or with "spare"`})
	}
	switch {
	case s.Spare < 0 || s.Spare > MaxSpare:
		ps = append(ps, Problem{Location: at("/spare"), Message: fmt.Sprintf("%d is out of range: want 0 to %d", s.Spare, MaxSpare)})
	case s.Spare > 0 && (s.IsPersistent() || s.URL != ""):
		ps = append(ps, Problem{Location: at("/spare"), Message: `spare applies only to a "per_request" command entry: a persistent or remote server is kept warm already`})
	}
	if k := s.KeepaliveMS; k != nil {
		switch {
		case *k < 0 || *k > MaxMillis:
			ps = append(ps, Problem{Location: at("/keepalive_ms"), Message: fmt.Sprintf("%d is out of range: want 0 (no pings) to %d (24 hours)", *k, MaxMillis)})
		case !s.IsPersistent():
			ps = append(ps, Problem{Location: at("/keepalive_ms"), Message: `keepalive_ms applies only with "lifecycle": "persistent"`})
		}
	}
	ps = append(ps, s.remoteProblems(at)...)
	ps = append(ps, s.sandboxProblems()...)
	for key, val := range s.Env {
		if _, err := expand(val, func(string) (string, bool) { return "", true }); err != nil {
			ps = append(ps, Problem{Location: at("/env/" + escapePointer(key)), Message: err.Error()})
		}
	}
	if j := s.Jail; j != nil {
		switch {
		case j.Name == "" && j.Path == "":
			ps = append(ps, Problem{Location: at("/jail"), Message: `give exactly one of "name" (an existing jail, run with jexec) or "path" (an ephemeral jail, run with jail -c)`})
		case j.Name != "" && j.Path != "":
			ps = append(ps, Problem{Location: at("/jail"), Message: `"name" and "path" exclude each other: "name" runs in an existing jail, "path" creates an ephemeral one`})
		}
		if j.RootPath != "" && j.Name == "" {
			ps = append(ps, Problem{Location: at("/jail/root_path"), Message: `"root_path" goes with "name" (with "path", the path is the root)`})
		}
		if j.RootPath != "" && !filepath.IsAbs(j.RootPath) {
			ps = append(ps, Problem{Location: at("/jail/root_path"), Message: "must be an absolute path"})
		}
		if j.Path != "" && !filepath.IsAbs(j.Path) {
			ps = append(ps, Problem{Location: at("/jail/path"), Message: "must be an absolute path"})
		}
		if j.IP4 != "" && j.Path == "" {
			ps = append(ps, Problem{Location: at("/jail/ip4"), Message: `"ip4" goes with "path": an existing jail already has its addresses`})
		}
	}
	return ps
}

// remoteProblems are the rule breaks of a url entry (CONTRACT.md section 3,
// "Remote servers"), and of remote keys in a command entry.
func (s *Server) remoteProblems(at func(string) string) []Problem {
	var ps []Problem
	if s.URL == "" {
		for _, k := range []struct {
			key string
			set bool
		}{{"transport", s.Transport != ""}, {"headers", s.Headers != nil}, {"bearer_token", s.BearerToken != ""},
			{"oauth", s.OAuth != nil}, {"allow_http", s.AllowHTTP}, {"allow_private_network", s.AllowPrivateNetwork}} {
			if k.set {
				ps = append(ps, Problem{Location: at("/" + k.key), Message: fmt.Sprintf(`%q applies only to a remote server ("url")`, k.key)})
			}
		}
		return ps
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"args", s.Args != nil}, {"env", s.Env != nil}, {"cwd", s.Cwd != ""}, {"jail", s.Jail != nil}} {
		if k.set {
			ps = append(ps, Problem{Location: at("/" + k.key), Message: fmt.Sprintf(`%q cannot go with "url": a remote server is not a process colibri starts`, k.key)})
		}
	}
	if p := urlProblem(s.URL, s.AllowHTTP); p != "" {
		ps = append(ps, Problem{Location: at("/url"), Message: p})
	}
	switch s.Transport {
	case "", TransportStreamable, TransportSSE, TransportAuto:
	default:
		ps = append(ps, Problem{Location: at("/transport"), Message: fmt.Sprintf("%q: want %q, %q or %q", s.Transport, TransportStreamable, TransportSSE, TransportAuto)})
	}
	for _, k := range s.HeaderKeys() {
		if i := controlIndex(k); i >= 0 || k == "" || strings.ContainsAny(k, " :") {
			ps = append(ps, Problem{Location: at("/headers"), Message: fmt.Sprintf("%q is not a header name", k)})
			continue
		}
		if transportHeader(k) {
			ps = append(ps, Problem{Location: at("/headers/" + escapePointer(k)), Message: fmt.Sprintf("%q is set by colibri's HTTP transport, not by headers", k)})
			continue
		}
		if _, err := expand(s.Headers[k], func(string) (string, bool) { return "", true }); err != nil {
			ps = append(ps, Problem{Location: at("/headers/" + escapePointer(k)), Message: err.Error()})
		} else if i := controlIndex(s.Headers[k]); i >= 0 && s.Headers[k][i] != '\t' {
			ps = append(ps, Problem{Location: at("/headers/" + escapePointer(k)), Message: fmt.Sprintf("holds the control character U+%04X at byte %d: control characters are not allowed here", s.Headers[k][i], i)})
		}
	}
	if s.BearerToken != "" {
		if _, err := expand(s.BearerToken, func(string) (string, bool) { return "", true }); err != nil {
			ps = append(ps, Problem{Location: at("/bearer_token"), Message: err.Error()})
		} else if i := controlIndex(s.BearerToken); i >= 0 {
			ps = append(ps, Problem{Location: at("/bearer_token"), Message: fmt.Sprintf("holds the control character U+%04X at byte %d: control characters are not allowed here", s.BearerToken[i], i)})
		}
		if s.OAuth != nil {
			ps = append(ps, Problem{Location: at("/bearer_token"), Message: `"bearer_token" and "oauth" exclude each other: give one way to authenticate`})
		}
		for _, k := range s.HeaderKeys() {
			if strings.EqualFold(k, "Authorization") {
				ps = append(ps, Problem{Location: at("/bearer_token"), Message: fmt.Sprintf(`"bearer_token" and the %q header exclude each other: bearer_token sets Authorization`, k)})
			}
		}
	}
	if o := s.OAuth; o != nil {
		switch o.Grant {
		case GrantClientCredentials:
			if o.ClientID == "" {
				ps = append(ps, Problem{Location: at("/oauth/client_id"), Message: `is required with "grant": "client_credentials"`})
			}
			if o.ClientSecret == "" {
				ps = append(ps, Problem{Location: at("/oauth/client_secret"), Message: `is required with "grant": "client_credentials"`})
			}
		case GrantAuthorizationCode:
		default:
			ps = append(ps, Problem{Location: at("/oauth/grant"), Message: fmt.Sprintf("%q: want %q or %q", o.Grant, GrantClientCredentials, GrantAuthorizationCode)})
		}
		if o.ClientSecret != "" {
			if _, err := expand(o.ClientSecret, func(string) (string, bool) { return "", true }); err != nil {
				ps = append(ps, Problem{Location: at("/oauth/client_secret"), Message: err.Error()})
			}
		}
	}
	return ps
}

// urlProblem says what is wrong with a remote server's url, or "": it must
// be https, or http to a loopback address unless allowHTTP.
func urlProblem(raw string, allowHTTP bool) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return fmt.Sprintf("%q is not an absolute http(s) URL", raw)
	}
	if u.User != nil {
		return "must not hold credentials (user:password@): use bearer_token or headers"
	}
	if u.Hostname() == "" {
		return fmt.Sprintf("%q names no host", raw)
	}
	if u.Fragment != "" || strings.HasSuffix(raw, "#") {
		return "must not hold a fragment (#…): it is never sent to the server"
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		if allowHTTP || loopbackHost(u.Hostname()) {
			return ""
		}
		return fmt.Sprintf(`plain http to %s would send requests (and any token) in clear: use https, or set "allow_http": true`, u.Hostname())
	}
	return fmt.Sprintf("scheme %q: want https (or http to a loopback address)", u.Scheme)
}

// transportHeader reports whether the header named k is one that the HTTP
// and MCP transports set themselves: one from headers would be dropped
// (Host, Content-Length) or would break the session (Mcp-Session-Id).
func transportHeader(k string) bool {
	switch textproto.CanonicalMIMEHeaderKey(k) {
	case "Host", "Content-Length", "Content-Type", "Content-Encoding", "Transfer-Encoding", "Connection",
		"Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Upgrade", "Accept", "Accept-Encoding",
		"Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id":
		return true
	}
	return false
}

// loopbackHost reports whether host is localhost, 127.0.0.0/8 or ::1.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// controlProblems refuses control characters (U+0000 to U+001F and U+007F)
// in every value that becomes part of a process's argv, environment or
// working directory: a NUL cannot pass through execve(2) at all, and the
// others are never meant (a stray newline or escape sequence is a mistake or
// an attack). The value itself is not repeated: it may be a secret.
func (s *Server) controlProblems(at func(string) string) []Problem {
	var ps []Problem
	check := func(key, v string) {
		if i := controlIndex(v); i >= 0 {
			ps = append(ps, Problem{Location: at(key), Message: fmt.Sprintf("holds the control character U+%04X at byte %d: control characters are not allowed here", v[i], i)})
		}
	}
	check("/command", s.Command)
	for i, a := range s.Args {
		check("/args/"+strconv.Itoa(i), a)
	}
	for _, k := range s.EnvKeys() {
		if i := controlIndex(k); i >= 0 {
			ps = append(ps, Problem{Location: at("/env"), Message: fmt.Sprintf("a variable name holds the control character U+%04X at byte %d", k[i], i)})
			continue
		}
		check("/env/"+escapePointer(k), s.Env[k])
	}
	check("/cwd", s.Cwd)
	if j := s.Jail; j != nil {
		check("/jail/name", j.Name)
		check("/jail/path", j.Path)
		check("/jail/root_path", j.RootPath)
		check("/jail/user", j.User)
		check("/jail/ip4", j.IP4)
	}
	return ps
}

// controlIndex is the byte index of the first control character in v
// (U+0000 to U+001F or U+007F), or -1.
func controlIndex(v string) int {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return i
		}
	}
	return -1
}

// ExpandEnv returns the server's environment with ${NAME} replaced by
// getenv(NAME) and $$ by a literal $. A variable that getenv does not know is
// an error naming it (and the key that refers to it), never an empty value.
func (s *Server) ExpandEnv(getenv func(string) (string, bool)) (map[string]string, error) {
	out := make(map[string]string, len(s.Env))
	for _, key := range s.EnvKeys() {
		v, err := expand(s.Env[key], getenv)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", key, err)
		}
		out[key] = v
	}
	return out, nil
}

// ShownURL is the url as colibri shows it (the servers tool, logs): each
// query value replaced by [redacted], since some servers take a token
// there ("?key=…"). The names stay.
func (s *Server) ShownURL() string {
	u, err := url.Parse(s.URL)
	if err != nil || u.RawQuery == "" {
		return s.URL
	}
	parts := strings.Split(u.RawQuery, "&")
	for i, p := range parts {
		if k, _, ok := strings.Cut(p, "="); ok {
			parts[i] = k + "=[redacted]"
		}
	}
	u.RawQuery = strings.Join(parts, "&")
	return u.String()
}

// URLSecrets are the query values of the url (as written and decoded):
// what ShownURL hides, for redacting anything else colibri shows.
func (s *Server) URLSecrets() []string {
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range strings.Split(u.RawQuery, "&") {
		if _, v, ok := strings.Cut(p, "="); ok && v != "" {
			out = append(out, v)
			if d, err := url.QueryUnescape(v); err == nil && d != v {
				out = append(out, d)
			}
		}
	}
	return out
}

// HeaderKeys returns the names of the server's headers, sorted. Their
// values are never shown.
func (s *Server) HeaderKeys() []string {
	keys := make([]string, 0, len(s.Headers))
	for k := range s.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Auth is how colibri authenticates to a remote server: "oauth", "bearer"
// (bearer_token, or an Authorization header) or "none".
func (s *Server) Auth() string {
	switch {
	case s.OAuth != nil:
		return "oauth"
	case s.BearerToken != "":
		return "bearer"
	}
	for k := range s.Headers {
		if strings.EqualFold(k, "Authorization") {
			return "bearer"
		}
	}
	return "none"
}

// ExpandRemote returns a remote server's headers and bearer token with
// ${NAME} replaced by getenv(NAME) and $$ by a literal $, as ExpandEnv does
// for env.
func (s *Server) ExpandRemote(getenv func(string) (string, bool)) (headers map[string]string, bearer string, err error) {
	headers = make(map[string]string, len(s.Headers))
	for _, key := range s.HeaderKeys() {
		v, err := expand(s.Headers[key], getenv)
		if err == nil {
			err = headerValueProblem(v)
		}
		if err != nil {
			return nil, "", fmt.Errorf("headers %s: %w", key, err)
		}
		headers[key] = v
	}
	bearer, err = expand(s.BearerToken, getenv)
	if err == nil {
		err = headerValueProblem(bearer)
	}
	if err != nil {
		return nil, "", fmt.Errorf("bearer_token: %w", err)
	}
	return headers, bearer, nil
}

// headerValueProblem refuses an expanded header value that HTTP cannot
// carry: a control character other than tab (a CR or LF would end the
// header; Go refuses the request, which would look like the server's
// fault). The value is not repeated: it is likely a secret.
func headerValueProblem(v string) error {
	if i := controlIndex(v); i >= 0 && v[i] != '\t' {
		return &ControlCharError{Char: v[i], At: i}
	}
	return nil
}

// ControlCharError is an expanded header value (or bearer token) holding a
// control character that HTTP cannot carry: a variable's value with a line
// break in it, most often. The value itself is never in the error.
type ControlCharError struct {
	Char byte // the first one
	At   int  // its byte index in the expanded value
}

func (e *ControlCharError) Error() string {
	return fmt.Sprintf("after ${NAME} expansion the value holds the control character U+%04X at byte %d, which an HTTP header cannot carry", e.Char, e.At)
}

// expand replaces ${NAME} and $$ in s. A lone $ followed by anything else is
// an error, so that a typo such as $NAME is caught instead of passed on.
func expand(s string, getenv func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '$':
			b.WriteByte('$')
			i++
		case i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf("unterminated ${ at byte %d (write $$ for a literal $)", i)
			}
			name := s[i+2 : i+2+end]
			if !validVarName(name) {
				return "", fmt.Errorf("${%s}: not a variable name", name)
			}
			v, ok := getenv(name)
			if !ok {
				return "", &MissingVarError{Name: name}
			}
			b.WriteString(v)
			i += 2 + end
		default:
			return "", fmt.Errorf("a $ at byte %d must start ${NAME} or be doubled as $$", i)
		}
	}
	return b.String(), nil
}

// MissingVarError is an ${NAME} whose variable is not set in colibri's environment.
type MissingVarError struct{ Name string }

func (e *MissingVarError) Error() string {
	return fmt.Sprintf("${%s} refers to a variable that is not set in colibri's environment", e.Name)
}

func validVarName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Error is an unreadable or invalid registry: the file, and each problem with
// its JSON location.
type Error struct {
	File     string
	Problems []Problem
	Err      error // the underlying error, when there is one
}

// Problem is one mistake in a registry, at a JSON Pointer (RFC 6901) location.
type Problem struct {
	Location string // "/servers/demo/args/1"; "" for the file as a whole
	Message  string
}

func (p Problem) String() string {
	if p.Location == "" {
		return p.Message
	}
	return p.Location + ": " + p.Message
}

func (e *Error) Error() string {
	file := e.File
	if file == "" {
		file = "registry"
	}
	// The file once, then each problem at its location (CONTRACT.md
	// section 3).
	var b strings.Builder
	b.WriteString(file)
	b.WriteString(": ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

var compiled = mustCompile()

// schemaURL names the embedded schema (its $id).
const schemaURL = "https://colibri-mcp.dev/schema/external-mcp.json"

func mustCompile() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		panic("registry: embedded schema: " + err.Error())
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		panic("registry: embedded schema: " + err.Error())
	}
	return c.MustCompile(schemaURL)
}

// SchemaProblems flattens a JSON Schema validation error into its leaf
// problems, each at the instance location it concerns; an unknown key of
// the registry's own schema names the closest key it allows (they are
// usually typos).
func SchemaProblems(ve *jsonschema.ValidationError) []Problem { return schemaProblems(ve, false) }

// schemaProblems is SchemaProblems; with skipNames it leaves out the
// propertyNames problems, which Parse finds itself (nameProblems).
func schemaProblems(ve *jsonschema.ValidationError, skipNames bool) []Problem {
	var ps []Problem
	for _, p := range schema.ProblemsOpts(ve, schema.Options{UnknownKey: unknownKey, SkipNames: skipNames}) {
		ps = append(ps, Problem{Location: p.Location, Message: p.Message})
	}
	return ps
}

func unknownKey(schemaURL, key string) string {
	msg := fmt.Sprintf("unknown key %q", key)
	if near := suggest.Closest(key, schemaKeys(schemaURL)); near != "" {
		msg += fmt.Sprintf(": did you mean %q?", near)
	}
	return msg
}

// schemaDoc is the embedded schema, decoded, to read its key names.
var schemaDoc = func() any {
	var doc any
	_ = json.Unmarshal(Schema, &doc)
	return doc
}()

// schemaKeys are the keys allowed by the object schema whose
// additionalProperties keyword is at url ("…#/$defs/server/additionalProperties").
func schemaKeys(url string) []string {
	base, frag, _ := strings.Cut(url, "#")
	if base != schemaURL {
		return nil // another schema (SchemaProblems serves others too)
	}
	var node any = schemaDoc
	for _, tok := range strings.Split(strings.TrimSuffix(frag, "/additionalProperties"), "/") {
		if tok == "" {
			continue
		}
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)]
	}
	m, _ := node.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// editorShape recognizes an editor's MCP configuration given as a registry:
// Claude Desktop's and Cursor's "mcpServers", VS Code's "servers" whose
// entries have a "type", Zed's "context_servers". It returns the key that
// gave it away, or "".
func editorShape(doc any) string {
	m, ok := doc.(map[string]any)
	if !ok {
		return ""
	}
	for _, k := range []string{"mcpServers", "context_servers"} {
		if _, ok := m[k]; ok {
			return k
		}
	}
	if servers, ok := m["servers"].(map[string]any); ok {
		for _, v := range servers {
			if entry, ok := v.(map[string]any); ok {
				if _, ok := entry["type"]; ok {
					return `"servers" entries with "type"`
				}
			}
		}
	}
	return ""
}

func escapePointer(s string) string { return schema.EscapePointer(s) }

// syntaxProblem turns a JSON syntax error into "line L, column C: ...".
func syntaxProblem(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, se.Offset)
		return fmt.Sprintf("line %d, column %d: invalid JSON: %s", line, col, se.Error())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "invalid JSON: the file ends too early (is it empty or cut short?)"
	}
	return "invalid JSON: " + err.Error()
}

// lineCol is the 1-based line and column of the byte before off: a
// json.SyntaxError's Offset counts the offending byte itself.
func lineCol(data []byte, off int64) (line, col int) {
	off = max(0, min(off-1, int64(len(data))))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
