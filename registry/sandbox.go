package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/colibri-mcp/colibri-mcp/internal/egress/dest"
)

// Sandbox is an entry's Linux confinement (docs/security.md#on-linux-a-sandboxed-server-keeps-to-what-its-entry-grants), or the
// top-level default. In a parsed registry, a command entry's Sandbox is the
// one that applies to it (its own, else the top-level one), with its paths
// resolved, and nil when none applies or the entry opts out with false.
type Sandbox struct {
	Read          []string `json:"read,omitempty"`
	Write         []string `json:"write,omitempty"`
	Net           *bool    `json:"net,omitempty"`
	Unix          []string `json:"unix,omitempty"` // pathname Unix sockets (or folders of them) beyond Write's
	MaxMemoryMB   int64    `json:"max_memory_mb,omitempty"`
	MaxCPUSeconds int64    `json:"max_cpu_seconds,omitempty"`
	MaxOpenFiles  int64    `json:"max_open_files,omitempty"` // 0: DefaultMaxOpenFiles
	// MaxConnections bounds, with a net list, the connections through the
	// egress proxy at once; 0: 64.
	MaxConnections int64  `json:"max_connections,omitempty"`
	Home           string `json:"home,omitempty"` // HomePerServer ("" too) or HomePerRequest
	BestEffort     bool   `json:"best_effort,omitempty"`

	// Destinations is "net" as a list: the destinations the server
	// reaches, through colibri's egress proxy, and nothing else (Net is
	// then nil). Each is checked by Validate (egress.ParseDestination).
	Destinations []string `json:"-"`

	// Off is "sandbox": false.
	Off bool `json:"-"`
	// At is the JSON location the sandbox was read from (/sandbox, or
	// /servers/NAME/sandbox), for messages about it.
	At string `json:"-"`
}

// DefaultMaxOpenFiles is a sandboxed server's open-file limit when its
// sandbox names none. The limit also bounds the kernel's socket buffers a
// server can hold, which max_memory_mb does not count (docs/security.md).
const DefaultMaxOpenFiles = 1024

// The sandbox's "home": whether the private HOME persists.
const (
	HomePerServer  = "per_server"  // one per server, kept across requests and callers (the default)
	HomePerRequest = "per_request" // a fresh one for each process, removed after it
)

// OpenFiles is the server's open-file limit.
func (s *Sandbox) OpenFiles() int64 {
	if s.MaxOpenFiles > 0 {
		return s.MaxOpenFiles
	}
	return DefaultMaxOpenFiles
}

// NetAllowed reports whether the sandboxed server may use the network
// (net defaults to true).
func (s *Sandbox) NetAllowed() bool { return s.Destinations == nil && (s.Net == nil || *s.Net) }

// Connections is the server's connections through the egress proxy at
// once, with a net list.
func (s *Sandbox) Connections() int {
	if s.MaxConnections > 0 {
		return int(s.MaxConnections)
	}
	return 64
}

// UnmarshalJSON reads false as Off, and an object as the sandbox.
func (s *Sandbox) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("false")) {
		*s = Sandbox{Off: true}
		return nil
	}
	type plain Sandbox
	aux := struct {
		*plain
		Net json.RawMessage `json:"net,omitempty"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	switch net := bytes.TrimSpace(aux.Net); {
	case len(net) == 0:
	case net[0] == '[':
		s.Destinations = []string{}
		return json.Unmarshal(net, &s.Destinations)
	default:
		return json.Unmarshal(net, &s.Net)
	}
	return nil
}

// MarshalJSON writes Off as false (the entry's fingerprint tells an
// opt-out from no sandbox at all).
func (s *Sandbox) MarshalJSON() ([]byte, error) {
	if s.Off {
		return []byte("false"), nil
	}
	type plain Sandbox
	if s.Destinations == nil {
		return json.Marshal((*plain)(s))
	}
	return json.Marshal(struct {
		*plain
		Net []string `json:"net"`
	}{(*plain)(s), s.Destinations})
}

// applySandbox gives a command entry the sandbox that applies to it and
// resolves its paths against dir (the registry's folder) and colibri's
// HOME. A jailed entry does not take the top-level default: on FreeBSD the
// jail is the sandbox.
func (s *Server) applySandbox(top *Sandbox, dir string) {
	if s.Sandbox == nil && top != nil && !top.Off && s.Command != "" && s.Jail == nil {
		cp := *top
		cp.At = "/sandbox"
		s.Sandbox = &cp
	} else if s.Sandbox != nil {
		s.Sandbox.At = "/servers/" + escapePointer(s.Name) + "/sandbox"
	}
	if s.Sandbox == nil || s.Sandbox.Off {
		return
	}
	cp := *s.Sandbox
	cp.Read, cp.Write, cp.Unix = resolvePaths(cp.Read, dir), resolvePaths(cp.Write, dir), resolvePaths(cp.Unix, dir)
	s.Sandbox = &cp
}

// resolvePaths makes each path absolute: ~ and ~/… are colibri's HOME, a
// relative path is read against dir.
func resolvePaths(paths []string, dir string) []string {
	if paths == nil {
		return nil
	}
	out := make([]string, len(paths))
	home, _ := os.UserHomeDir()
	for i, p := range paths {
		switch {
		case p == "~" && home != "":
			p = home
		case strings.HasPrefix(p, "~/") && home != "":
			p = filepath.Join(home, p[2:])
		case !filepath.IsAbs(p):
			p = filepath.Join(dir, p)
		}
		out[i] = filepath.Clean(p)
	}
	return out
}

// sandboxProblems are the rule breaks of an entry's sandbox: not with a
// jail or a url, not off Linux, and every path must exist.
func (s *Server) sandboxProblems() []Problem {
	sb := s.Sandbox
	if sb == nil || sb.Off {
		return nil
	}
	switch {
	case s.Jail != nil:
		return []Problem{{Location: sb.At, Message: `"sandbox" cannot go with "jail": the jail is the sandbox`}}
	case s.URL != "":
		return []Problem{{Location: sb.At, Message: `"sandbox" applies only to a command entry: a remote server is not a process colibri starts`}}
	case !sandboxAvailable && sb.At == "/sandbox":
		return nil // said once, for the top-level key (Registry.Validate)
	case !sandboxAvailable:
		return []Problem{{Location: sb.At, Message: sandboxElsewhere}}
	}
	var ps []Problem
	for i, d := range sb.Destinations {
		if _, err := dest.Parse(d); err != nil {
			ps = append(ps, Problem{Location: fmt.Sprintf("%s/net/%d", sb.At, i), Message: err.Error()})
		}
	}
	for _, set := range []struct {
		key   string
		paths []string
	}{{"read", sb.Read}, {"write", sb.Write}, {"unix", sb.Unix}} {
		for i, p := range set.paths {
			if _, err := os.Stat(p); err != nil {
				ps = append(ps, Problem{Location: fmt.Sprintf("%s/%s/%d", sb.At, set.key, i),
					Message: fmt.Sprintf("%s does not exist (or cannot be reached): a sandbox grants existing paths only", shownPath(p))})
			}
		}
	}
	return ps
}

// shownPath is p for a message: quoted where it holds a control character
// (a newline would start a line of its own in check's output).
func shownPath(p string) string {
	if strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return strconv.Quote(p)
	}
	return p
}

// Confinement is the sandbox that applies to the entry, or nil.
func (s *Server) Confinement() *Sandbox {
	if s.Sandbox == nil || s.Sandbox.Off {
		return nil
	}
	return s.Sandbox
}

// registryDir is the folder relative sandbox paths are read against: the
// registry file's, or the working directory for a registry with no file.
func registryDir(file string) string {
	dir := "."
	if file != "" {
		dir = filepath.Dir(file)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// topSandboxProblems refuses a top-level sandbox off Linux, once.
func (r *Registry) topSandboxProblems() []Problem {
	if r.Sandbox == nil || r.Sandbox.Off || sandboxAvailable {
		return nil
	}
	return []Problem{{Location: "/sandbox", Message: sandboxElsewhere}}
}

// onceEach drops repeated problems, keeping the order.
func onceEach(ps []Problem) []Problem {
	seen := map[Problem]bool{}
	out := ps[:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// ConfinementLine says in one line how the entry's processes are confined
// (docs/security.md#on-linux-a-sandboxed-server-keeps-to-what-its-entry-grants): "sandboxed: read …, write …, net off",
// "jail mcp0", or "unconfined: can read everything colibri can".
func (s *Server) ConfinementLine() string {
	switch sb := s.Confinement(); {
	case s.URL != "":
		return "remote: no process of this machine"
	case s.Jail != nil && s.Jail.Name != "":
		return "jail " + s.Jail.Name
	case s.Jail != nil:
		return "jail " + s.Jail.Path + " (ephemeral)"
	case sb != nil:
		paths := func(ps []string) string {
			if len(ps) == 0 {
				return "nothing more"
			}
			return strings.Join(ps, " ")
		}
		line := "sandboxed: read " + paths(sb.Read) + ", write " + paths(sb.Write) + ", net "
		switch {
		case sb.Destinations != nil && len(sb.Destinations) == 0:
			line += "nothing"
		case sb.Destinations != nil:
			line += strings.Join(sb.Destinations, ",")
		case sb.NetAllowed():
			line += "on"
		default:
			line += "off"
		}
		// Unix sockets are closed unless granted: the line names the key
		// that grants one.
		line += ", unix " + strings.Join(sb.Unix, " ")
		if len(sb.Unix) == 0 {
			line += "none"
		}
		if sb.MaxMemoryMB > 0 {
			line += fmt.Sprintf(", max_memory_mb %d", sb.MaxMemoryMB)
		}
		if sb.MaxCPUSeconds > 0 {
			line += fmt.Sprintf(", max_cpu_seconds %d", sb.MaxCPUSeconds)
		}
		if sb.MaxOpenFiles > 0 {
			line += fmt.Sprintf(", max_open_files %d", sb.MaxOpenFiles)
		}
		if sb.Home == HomePerRequest {
			line += ", home per_request"
		}
		if sb.BestEffort {
			line += ", best_effort"
		}
		return line
	}
	return "unconfined: can read everything colibri can"
}
