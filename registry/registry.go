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
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"

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

// Registry is a parsed, validated registry file.
type Registry struct {
	// Path is the file the registry was read from ("" when parsed from a reader
	// without a name).
	Path    string
	Servers map[string]*Server
	// Policy is the top-level "policy": it applies to every server,
	// together with each server's own (docs/operations.md#policy).
	Policy *policy.Policy
	// Sandbox is the top-level "sandbox", every command entry's default.
	Sandbox *Sandbox
	// Pin is the top-level "pin": every server's default (docs/cli.md#pinned-tool-definitions); "" means PinEnforce.
	Pin string
	// PinScan is the top-level "pin_scan": every server's default; ""
	// means ScanWarn.
	PinScan string
	// PassEnv is the top-level "pass_env", every entry's default.
	PassEnv []string
}

// The values of "pin" (docs/cli.md#pinned-tool-definitions).
const (
	PinEnforce = "enforce"
	PinWarn    = "warn"
	PinOff     = "off"
	// PinLocked, at the top level only, is enforce with the pin file as a
	// lock: only ever read, and what it does not hold is not trusted
	// (docs/security.md, locked pins). A server's own pin may then be
	// warn or off only.
	PinLocked = "locked"
)

// The values of "pin_scan" (docs/security.md, the poisoning scan).
const (
	ScanWarn  = "warn"
	ScanBlock = "block"
	ScanOff   = "off"
)

// PinScanMode is what a sign of tool poisoning in srv's definitions does:
// its own "pin_scan", else the top-level one, else ScanWarn.
func (r *Registry) PinScanMode(srv *Server) string {
	mode := r.PinScan
	if srv != nil && srv.PinScan != "" {
		mode = srv.PinScan
	}
	switch mode {
	case ScanBlock, ScanOff:
		return mode
	}
	return ScanWarn
}

// Locked reports whether the registry says "pin": "locked".
func (r *Registry) Locked() bool { return r.Pin == PinLocked }

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
	// (docs/registry.md#spare-processes-ready-before-the-request); 0 keeps none.
	Spare int `json:"spare,omitempty"`

	// A remote server (docs/registry.md#remote-servers-url): URL is set
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
	// PinScan is the server's own "pin_scan" (replacing the top-level
	// one); "" means the top-level one. Left out of the entry's JSON, as
	// Pin is.
	PinScan string `json:"-"`
	// PinResources is the server's "pin_resources": its resources are
	// pinned as well as its tools, prompts, templates and instructions
	// (docs/security.md). Left out of the entry's JSON, as Pin is.
	PinResources bool `json:"-"`
	// fingerprint is the entry's as the file wrote it (Fingerprint).
	fingerprint *EntryFingerprint
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
	// TokenFiles are the files colibri reads for the registry's entries
	// beyond its own settings' (each oauth.token_file), the same for every
	// entry: no sandbox may grant one (docs/security.md).
	TokenFiles []string `json:"-"`
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
