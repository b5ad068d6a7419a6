package registry

import (
	"fmt"
	"net/netip"
	"net/textproto"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/policy"
)

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
		if r.Locked() && s.Pin == PinEnforce {
			problems = append(problems, Problem{Location: "/servers/" + escapePointer(name) + "/pin", Message: `under the top-level "pin": "locked" a server's own pin may only be "warn" or "off" (it is enforced by the lock already): remove it, or say which`})
		}
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
// characters of an aggregate tool name (docs/cli.md#aggregate-mode), at most 32
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

// namePattern is the rule for server names (docs/registry.md), also in
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

// remoteProblems are the rule breaks of a url entry (docs/registry.md,
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

// PlainHTTPHost is the host of raw when raw is plain http to an address
// beyond loopback (which the registry refuses unless "allow_http"), or "".
func PlainHTTPHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || loopbackHost(u.Hostname()) {
		return ""
	}
	return u.Hostname()
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
