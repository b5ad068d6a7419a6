// Package launch decides what to run for a registry entry: the child's
// explicit environment (docs/registry.md#env-and-name), its command found on the
// child's PATH, wrapped for its FreeBSD jail (jail.Wrap) or its sandbox
// (internal/sandbox), and its working directory, as an *exec.Cmd that is
// built, never started; and the secrets ${NAME} put into it, for redaction.
//
//	b := launch.New(launch.Config{Environ: os.Environ, JailPriv: jail.PrivNone})
//	cmd, secrets, err := b.Command(srv) // err: a *failure.Error (config, spawn, jail, sandbox)
//	…
//	child, err := proc.StartChild(cmd, …)
package launch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/colibri-mcp/colibri-mcp/internal/egress"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/redact"
	"github.com/colibri-mcp/colibri-mcp/internal/sandbox"
	"github.com/colibri-mcp/colibri-mcp/internal/sandbox/early"
	"github.com/colibri-mcp/colibri-mcp/jail"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Config is what a Builder needs of colibri. The zero value of each field
// means its default.
type Config struct {
	// Environ is colibri's own environment, the source of the child's few
	// inherited variables and of ${NAME} in the registry; nil means os.Environ.
	Environ func() []string
	// JailPriv and JailHelper: how jail commands gain privilege.
	JailPriv   jail.Priv
	JailHelper string
	// Launcher is colibri's own binary, run as the sandbox launcher
	// (internal/sandbox) for an entry with a sandbox; without it such an
	// entry fails with kind sandbox.
	Launcher string
	// SandboxABI, when set, replaces the kernel's Landlock ABI as colibri
	// sees it (tests play an older kernel, or one without Landlock).
	SandboxABI func() int
	// NoUserNamespaces plays a machine that restricts unprivileged user
	// namespaces (tests): no "net" list gets a network namespace.
	NoUserNamespaces bool
	// SandboxProtect are colibri's own files (registry, pin file, audit
	// log, token and key files): no sandbox may grant a path that holds one.
	SandboxProtect []string
	// StateDir is colibri's state folder, home of the sandboxes' private
	// HOME and TMPDIR folders; "" means $XDG_STATE_HOME/colibri-mcp.
	StateDir string
	// Logger is told once per server of a best_effort sandbox's missing
	// rules, and of each connection the egress proxy refuses; nil discards.
	Logger *slog.Logger
	// EgressRefused and EgressConnected count, per server, the egress
	// proxy's refusals and connections (metrics); nil: not counted.
	EgressRefused, EgressConnected func(server string)
}

// Builder builds the commands of registry entries. It is safe for
// concurrent use.
type Builder struct {
	cfg       Config
	egressMu  sync.Mutex
	proxy     *egress.Proxy // started for the first sandbox with a "net" list
	proxySock string        // its Unix socket, for servers in network namespaces of their own; "": none
	netnsOnce sync.Once
	netnsOK   bool
	grants    map[string]*egress.Grant // by server, destinations and max_connections
	seq       atomic.Uint64            // ephemeral jails' names
	warned    sync.Map                 // server name → true once a best_effort sandbox's missing rules were logged
}

// New returns a Builder with cfg, defaults filled in.
func New(cfg Config) *Builder {
	if cfg.Environ == nil {
		cfg.Environ = os.Environ
	}
	if cfg.JailPriv == "" {
		cfg.JailPriv = jail.PrivNone
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Builder{cfg: cfg}
}

// Getenv looks NAME up in colibri's own environment (for ${NAME}).
func (b *Builder) Getenv(name string) (string, bool) {
	for _, kv := range b.cfg.Environ() {
		if v, ok := cutVar(kv, name); ok {
			return v, true
		}
	}
	return "", false
}

func cutVar(kv, name string) (string, bool) {
	if len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name {
		return kv[len(name)+1:], true
	}
	return "", false
}

// childEnvNames are the only variables of colibri's own environment that
// reach a hosted server (docs/registry.md#env-and-name); LC_* is matched by prefix.
var childEnvNames = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR"}

// childEnv builds the hosted server's environment: the contract's few
// variables from colibri's environment, then those pass (the entry's
// pass_env) lets through, then the entry's own (already expanded) env, which
// wins.
func childEnv(environ, pass []string, own map[string]string) []string {
	var env []string
	passed := registry.PassedEnv(pass, environ)
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, overridden := own[name]; overridden {
			continue
		}
		if slices.Contains(childEnvNames, name) || strings.HasPrefix(name, "LC_") || slices.Contains(passed, kv) {
			env = append(env, kv)
		}
	}
	for _, k := range sortedKeys(own) {
		env = append(env, k+"="+own[k])
	}
	return env
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// lookPath finds a bare command name in the child's PATH (not colibri's own),
// as execvp(3) in the child would.
func lookPath(name, pathList string) (string, error) {
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	// The PATH value is not shown: it is the child's environment, which
	// may hold what the registry put there.
	return "", fmt.Errorf("%q: %w in the child's PATH", name, exec.ErrNotFound)
}

// Command prepares, but does not start, the command of srv: explicit
// environment, resolved command, jail or sandbox wrapping, working
// directory. It also returns the values of colibri's variables that ${NAME}
// put into the child's environment: secrets, to be redacted wherever the
// server's own words are shown.
func (b *Builder) Command(srv *registry.Server) (*exec.Cmd, *redact.Set, error) {
	var secrets []string
	own, err := srv.ExpandEnv(func(name string) (string, bool) {
		v, ok := b.Getenv(name)
		if ok {
			secrets = append(secrets, v)
		}
		return v, ok
	})
	if err != nil {
		return nil, nil, &failure.Error{Kind: failure.KindConfig, Server: srv.Name, Phase: failure.PhaseSpawn, Err: err,
			Hint: registry.MissingVarHint}
	}
	cmd, err := b.wrapCmd(srv, own)
	if err != nil {
		return nil, nil, err
	}
	return cmd, redact.New(secrets), nil
}

// wrapCmd resolves srv's command in the child's PATH and wraps it for its
// jail.
func (b *Builder) wrapCmd(srv *registry.Server, own map[string]string) (*exec.Cmd, error) {
	var err error
	var netns bool // the launcher starts in a network namespace of its own
	env := childEnv(b.cfg.Environ(), srv.PassEnv, own)

	argv := append([]string{srv.Command}, srv.Args...)
	if srv.Jail == nil {
		if !filepath.IsAbs(srv.Command) {
			path, err := lookPath(srv.Command, envValue(env, "PATH"))
			if err != nil {
				return nil, &failure.Error{Kind: failure.KindSpawn, Server: srv.Name, Phase: failure.PhaseSpawn, Err: err}
			}
			argv[0] = path
		} else if err := checkExecutable(srv.Command); err != nil {
			return nil, &failure.Error{Kind: failure.KindSpawn, Server: srv.Name, Phase: failure.PhaseSpawn, Err: err}
		}
		var proxyURL string
		if argv, proxyURL, err = b.confine(srv, argv); err != nil {
			return nil, err
		}
		if proxyURL != "" {
			env = proxyEnv(env, proxyURL)
		}
		netns = strings.HasPrefix(proxyURL, "http://") && b.proxySockIn(argv)
	} else {
		spec := jailSpec(srv.Jail)
		spec.Cwd = srv.Cwd // jexec -d: a directory inside the jail
		if spec.Path != "" {
			spec.Ephemeral = b.ephemeralName()
		}
		if spec.Cwd != "" && spec.Name != "" {
			if err := checkJexecCwd(srv, envValue(env, "PATH")); err != nil {
				return nil, err
			}
		}
		if spec.RootPath != "" {
			if p, err := jail.CheckRoot(spec.RootPath, srv.Command, envValue(env, "PATH")); err != nil {
				return nil, &failure.Error{Kind: failure.KindSpawn, Server: srv.Name, Phase: failure.PhaseSpawn,
					Err: fmt.Errorf("%s: %w", p, err), Hint: "install the server inside the jail, or fix root_path"}
			}
		}
		argv, err = jail.Wrap(spec, b.cfg.JailPriv, b.cfg.JailHelper, argv)
		if err != nil {
			return nil, &failure.Error{Kind: failure.KindJail, Server: srv.Name, Phase: failure.PhaseSpawn, Err: err}
		}
		if b.cfg.JailPriv == jail.PrivHelper {
			if err := checkExecutable(argv[0]); err != nil {
				return nil, &failure.Error{Kind: failure.KindJail, Server: srv.Name, Phase: failure.PhaseSpawn,
					Err: fmt.Errorf("jail helper: %w", err), Hint: "install the helper or set COLIBRI_JAIL_HELPER"}
			}
		}
		if !filepath.IsAbs(argv[0]) { // jexec, jail or mdo: found on the child's PATH
			path, err := lookPath(argv[0], envValue(env, "PATH"))
			if err != nil {
				return nil, &failure.Error{Kind: failure.KindJail, Server: srv.Name, Phase: failure.PhaseSpawn, Err: err,
					Hint: "the jail tools must be on the child's PATH"}
			}
			argv[0] = path
		}
	}
	cmd := &exec.Cmd{
		Path:        argv[0],
		Args:        argv,
		Env:         env,
		SysProcAttr: sysProcAttr(),
	}
	if netns {
		cmd.SysProcAttr = netnsAttr(cmd.SysProcAttr)
	}
	if srv.Jail == nil {
		cmd.Dir = srv.Dir // the registry's folder, unless cwd says otherwise
	}
	if srv.Cwd != "" && srv.Jail == nil {
		cmd.Dir = srv.Cwd
		if st, err := os.Stat(srv.Cwd); err != nil || !st.IsDir() {
			return nil, &failure.Error{Kind: failure.KindSpawn, Server: srv.Name, Phase: failure.PhaseSpawn,
				Err: fmt.Errorf("cwd %s is not a directory", srv.Cwd)}
		}
	}
	return cmd, nil
}

func jailSpec(j *registry.Jail) jail.Spec {
	return jail.Spec{Name: j.Name, Path: j.Path, RootPath: j.RootPath, User: j.User, IP4: j.IP4}
}

func checkExecutable(path string) error {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	case st.Mode().Perm()&0o111 == 0:
		return &fs.PathError{Op: "exec", Path: path, Err: syscall.EACCES}
	}
	return nil
}

// confine wraps argv (its command resolved) in the sandbox launcher when
// srv's entry has a sandbox (internal/sandbox): the argv that starts the
// launcher, which confines itself and then execs argv. It runs where every
// command is built (wrapCmd), so per-request, warm and spare processes get
// the same confinement.
func (b *Builder) confine(srv *registry.Server, argv []string) ([]string, string, error) {
	if srv.Confinement() == nil {
		return argv, "", nil
	}
	plan, warning, proxyURL, err := b.plan(srv, argv)
	if err != nil {
		return nil, "", err
	}
	if warning != "" {
		if _, told := b.warned.LoadOrStore(srv.Name, true); !told {
			b.cfg.Logger.Warn("the sandbox runs without some of its rules", "server", srv.Name, "reason", warning)
		}
	}
	return sandbox.Argv(b.cfg.Launcher, plan, argv), proxyURL, nil
}

// plan is the sandbox plan of srv's command argv (resolved), what a
// best_effort sandbox runs without, and with a "net" list the URL of the
// server's grant at the egress proxy.
func (b *Builder) plan(srv *registry.Server, argv []string) (*sandbox.Plan, string, string, error) {
	sb := srv.Confinement()
	fail := func(kind failure.Kind, err error, hint string) (*sandbox.Plan, string, string, error) {
		return nil, "", "", &failure.Error{Kind: kind, Server: srv.Name, Phase: failure.PhaseSpawn, Err: err, Hint: hint}
	}
	if b.cfg.Launcher == "" {
		return fail(failure.KindSandbox, errors.New("no sandbox launcher: this colibri was not told its own binary"), "")
	}
	abi := sandbox.DetectABI
	if b.cfg.SandboxABI != nil {
		abi = b.cfg.SandboxABI
	}
	dir := srv.Cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	home, _ := b.Getenv("HOME")
	state := b.stateDir()
	var proxyURL string
	var proxyPort int
	var proxySock string
	if sb.Destinations != nil {
		g, err := b.egressGrant(srv)
		if err != nil {
			return fail(failure.KindSandbox, fmt.Errorf("%s: starting the egress proxy: %w", sb.At, err), "")
		}
		proxyURL, proxyPort = g.URL, g.Port()
		b.egressMu.Lock()
		proxySock = b.proxySock
		b.egressMu.Unlock()
	}
	plan, warning, err := sandbox.Prepare(sandbox.Input{
		Server: srv.Name,
		Spec: sandbox.Spec{Read: sb.Read, Write: sb.Write, Unix: sb.Unix, Net: sb.NetAllowed(),
			MaxMemoryMB: sb.MaxMemoryMB, MaxCPUSeconds: sb.MaxCPUSeconds, MaxOpenFiles: sb.OpenFiles(),
			HomePerRequest: sb.Home == registry.HomePerRequest, BestEffort: sb.BestEffort,
			Egress: sb.Destinations != nil, ProxyPort: proxyPort, ProxySock: proxySock},
		Argv:     argv,
		Dir:      dir,
		StateDir: state,
		// Every server's private HOME and TMPDIR are colibri's too: no
		// grant may reach another server's; and so is every file colibri
		// reads for an entry (each oauth.token_file), wherever it lies.
		Protect: slices.Concat(b.cfg.SandboxProtect, srv.TokenFiles, []string{filepath.Join(state, "home"), filepath.Join(state, "tmp")}),
		ABI:     abi(),
		Home:    home,
	})
	var se *sandbox.Error
	switch {
	case errors.As(err, &se) && se.Config:
		return fail(failure.KindConfig, fmt.Errorf("%s: %s", sb.At, se.Msg), "")
	case err != nil:
		return fail(failure.KindSandbox, fmt.Errorf("%s: %w", sb.At, err),
			`set "best_effort": true in the sandbox to run with what the kernel has, or "sandbox": false to run unconfined`)
	}
	return plan, warning, proxyURL, nil
}

// Confinement says in one line how srv's processes are confined, as check
// and the servers tool show it: the entry's own line (registry), and for a
// sandbox what this kernel and the command make of it: the grants the
// command's own files made, and what a best_effort sandbox runs without.
// A sandbox that cannot be set up gets the entry's line alone (Command
// says why).
func (b *Builder) Confinement(srv *registry.Server) string {
	line := srv.ConfinementLine()
	if srv.Confinement() == nil || srv.Jail != nil {
		return line
	}
	argv := []string{srv.Command}
	if !filepath.IsAbs(srv.Command) {
		own, _ := srv.ExpandEnv(b.Getenv)
		path, err := lookPath(srv.Command, envValue(childEnv(b.cfg.Environ(), srv.PassEnv, own), "PATH"))
		if err != nil {
			return line
		}
		argv[0] = path
	}
	plan, warning, _, err := b.plan(srv, append(argv, srv.Args...))
	if err != nil {
		return line
	}
	var auto []string
	for _, g := range plan.Auto {
		if !slices.ContainsFunc(plan.Auto, func(d string) bool { return d != g && strings.HasPrefix(g, d+"/") }) {
			auto = append(auto, g)
		}
	}
	if len(auto) > 0 {
		line += ", automatic read " + strings.Join(auto, " ")
	}
	if warning != "" {
		line += "; best_effort: " + warning
	}
	return line
}

// proxySockIn reports whether the launcher's argv asks for a network
// namespace of its own (the plan names the egress proxy's Unix socket).
func (b *Builder) proxySockIn(argv []string) bool {
	return slices.ContainsFunc(argv, func(a string) bool { return strings.HasPrefix(a, early.KeyNetns+"=") }) &&
		slices.Index(argv, early.End) > slices.IndexFunc(argv, func(a string) bool { return strings.HasPrefix(a, early.KeyNetns+"=") })
}

// stateDir is colibri's state folder: StateDir, else
// $XDG_STATE_HOME/colibri-mcp, else ~/.local/state/colibri-mcp.
func (b *Builder) stateDir() string {
	if b.cfg.StateDir != "" {
		return b.cfg.StateDir
	}
	if v, ok := b.Getenv("XDG_STATE_HOME"); ok && filepath.IsAbs(v) {
		return filepath.Join(v, "colibri-mcp")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "colibri-mcp")
}

// ephemeralName names the ephemeral jail of one process: colibri's pid and
// a sequence number, unique on the host while colibri runs.
func (b *Builder) ephemeralName() string {
	return fmt.Sprintf("colibri_%d_%d", os.Getpid(), b.seq.Add(1))
}

// checkJexecCwd refuses cwd with jail.name where the installed jexec(8)
// lacks -d (older FreeBSD releases), before anything starts.
func checkJexecCwd(srv *registry.Server, pathList string) error {
	path, err := lookPath("jexec", pathList)
	if err != nil {
		return nil // not found: the start says so
	}
	if ok, err := jail.JexecHasCwd(path); err == nil && !ok {
		return &failure.Error{Kind: failure.KindJail, Server: srv.Name, Phase: failure.PhaseSpawn,
			Err:  fmt.Errorf("cwd %s needs jexec -d, which %s lacks (this FreeBSD release's jexec(8) has no -d)", srv.Cwd, path),
			Hint: "upgrade FreeBSD, or drop cwd and pass the directory in the server's own arguments"}
	}
	return nil
}

// JailRemoval is the command that removes the ephemeral jail cmd creates,
// through the same privilege mode, or nil for any other command.
func (b *Builder) JailRemoval(cmd *exec.Cmd) []string {
	name := jail.EphemeralName(cmd.Args)
	if name == "" {
		return nil
	}
	argv, err := jail.Remove(name, b.cfg.JailPriv, b.cfg.JailHelper)
	if err != nil {
		return nil
	}
	if !strings.HasPrefix(argv[0], "/") {
		if path, err := lookPath(argv[0], envValue(cmd.Env, "PATH")); err == nil {
			argv[0] = path
		}
	}
	return argv
}
