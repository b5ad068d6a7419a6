package host

import (
	"context"
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
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/lineconn"
	osproc "github.com/colibri-mcp/colibri-mcp/internal/proc"
	"github.com/colibri-mcp/colibri-mcp/internal/reqid"
	"github.com/colibri-mcp/colibri-mcp/internal/sandbox"
	"github.com/colibri-mcp/colibri-mcp/internal/unreadable"
	"github.com/colibri-mcp/colibri-mcp/jail"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// proc is one hosted server process: its pipes, its process group, its stderr
// tail, and the goroutine that reaps it. colibri starts it itself (rather than
// through mcp.CommandTransport) so that the pipes are plain files that Wait
// never touches, the whole group can be killed, and stdout can be bounded as
// it is read (see limitReader).
type proc struct {
	server string
	cmd    *exec.Cmd
	pid    int
	log    *slog.Logger

	stdin  *os.File // our end of the child's stdin
	stdout *os.File // our end of the child's stdout

	stderr     *tail
	stderrFile *os.File // our end of the child's stderr
	stderrDone chan struct{}

	exited  chan struct{} // closed once the process is reaped
	waitErr error         // valid after exited is closed

	tooLarge    atomic.Bool  // stdout crossed the result limit: the group was killed
	stdoutEOF   atomic.Bool  // the server closed its stdout
	stdinBroken atomic.Bool  // a write to the server's stdin failed: it closed it, or exited
	bytesRead   atomic.Int64 // read from the server's stdout so far
	// stalledSince is when the write to the server's stdin under way last
	// made progress (UnixNano), 0 when none is under way (pipeWriter).
	stalledSince atomic.Int64

	redact *redactor // the secrets colibri expanded into its environment
	limits string    // its sandbox's resource limits, for the message about its end
	limit  int64     // MaxResultBytes: one message from stdout at most
	bulk   *bulk.Table

	jailRemove []string  // removes its ephemeral jail (jailclean.go), or nil
	jailOnce   sync.Once // removeJail runs once

	inputOnce   sync.Once
	inputClosed atomic.Bool // colibri closed the server's stdin (closeInput)
	closeOnce   sync.Once
}

// childEnvNames are the only variables of colibri's own environment that
// reach a hosted server (CONTRACT.md section 3); LC_* is matched by prefix.
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

// buildCmd prepares, but does not start, the command of srv: explicit
// environment, resolved command, jail wrapping, working directory. It also
// returns the values of colibri's variables that ${NAME} put into the
// child's environment: secrets, to be redacted wherever the server's own
// words are shown.
func (h *Host) buildCmd(srv *registry.Server) (*exec.Cmd, *redactor, error) {
	var secrets []string
	own, err := srv.ExpandEnv(func(name string) (string, bool) {
		v, ok := h.getenv(name)
		if ok {
			secrets = append(secrets, v)
		}
		return v, ok
	})
	if err != nil {
		return nil, nil, &failure.Error{Kind: failure.KindConfig, Server: srv.Name, Phase: failure.PhaseSpawn, Err: err,
			Hint: "set the variable in colibri's environment, or write $$ for a literal $"}
	}
	cmd, err := h.wrapCmd(srv, own)
	if err != nil {
		return nil, nil, err
	}
	return cmd, newRedactor(secrets), nil
}

// wrapCmd resolves srv's command in the child's PATH and wraps it for its
// jail.
func (h *Host) wrapCmd(srv *registry.Server, own map[string]string) (*exec.Cmd, error) {
	var err error
	env := childEnv(h.opts.Environ(), srv.PassEnv, own)

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
		if argv, err = h.confine(srv, argv); err != nil {
			return nil, err
		}
	} else {
		spec := jailSpec(srv.Jail)
		spec.Cwd = srv.Cwd // jexec -d: a directory inside the jail
		if spec.Path != "" {
			spec.Ephemeral = h.ephemeralName()
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
		argv, err = jail.Wrap(spec, h.opts.JailPriv, h.opts.JailHelper, argv)
		if err != nil {
			return nil, &failure.Error{Kind: failure.KindJail, Server: srv.Name, Phase: failure.PhaseSpawn, Err: err}
		}
		if h.opts.JailPriv == jail.PrivHelper {
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

// start starts cmd in a session of its own with three plain pipes.
func (h *Host) start(ctx context.Context, srv *registry.Server, cmd *exec.Cmd, redact *redactor) (*proc, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, spawnErr(srv.Name, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, spawnErr(srv.Name, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, spawnErr(srv.Name, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = osproc.Start(cmd)   // colibri's own child: never taken for an orphan
	closeAll(inR, outW, errW) // the child holds its own copies now
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, spawnErr(srv.Name, err)
	}
	p := &proc{
		server:     srv.Name,
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		stdin:      inW,
		stdout:     outR,
		stderr:     newTail(stderrTailBytes),
		stderrFile: errR,
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
		redact:     redact,
		limit:      h.opts.MaxResultBytes,
		bulk:       h.opts.Bulk,
	}
	p.stderr.redact, p.stderr.held = redact.apply, redact.held
	p.log = h.log.With("server", srv.Name, "pid", p.pid)
	startCtx := ctx // its "started" line names the request it starts for
	if id := reqid.From(ctx); id != "" && !srv.IsPersistent() {
		// A per-request process belongs to one request: its lines carry
		// that request's id. (A warm process serves many.)
		p.log = p.log.With(reqid.Key, id)
		startCtx = reqid.With(ctx, "") // the id is on p.log already: once is enough
	}
	p.limits = sandbox.Limits(cmd.Args)
	p.jailRemove = h.jailRemoval(cmd)
	go func() {
		p.waitErr = cmd.Wait()
		osproc.Reaped(p.pid)
		if err := sandbox.Cleanup(cmd.Args); err != nil {
			p.log.Warn("cannot remove the sandbox's private TMPDIR", "err", err)
		}
		close(p.exited)
	}()
	go func() {
		defer close(p.stderrDone)
		defer errR.Close()
		p.stderr.readLines(errR, func(line string) {
			p.log.Debug("stderr", "line", line) // already redacted
		})
	}()
	if h.opts.OnSpawn != nil {
		h.opts.OnSpawn(srv.Name, p.pid)
	}
	p.log.DebugContext(startCtx, "started", "argv", cmd.Args)
	return p, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// spawnErr classifies a failure to start: a missing or non-executable
// command is permanent; anything else (EAGAIN, EMFILE, ENOMEM…) may pass.
func spawnErr(server string, err error) *failure.Error {
	e := &failure.Error{Kind: failure.KindSpawn, Server: server, Phase: failure.PhaseSpawn, Err: err}
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC),
		errors.Is(err, syscall.ENOTDIR), errors.Is(err, exec.ErrNotFound):
	default:
		e.Retry.Transient = true
	}
	return e
}

// hasExited reports whether the process has been reaped, waiting at most d
// for it: a process whose stdout just closed is usually a moment from exit.
func (p *proc) hasExited(d time.Duration) bool { return closedWithin(p.exited, d) }

// closedWithin reports whether ch is closed, waiting at most d for it.
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// exitStatus says how the process ended; one that failed under a
// sandbox's resource limits names them: past one, the kernel ends it.
func (p *proc) exitStatus() string {
	s := p.endStatus()
	if p.limits != "" && s != "is still running" && s != "exited with status 0" {
		s += " (its sandbox limits it to " + p.limits + ")"
	}
	return s
}

func (p *proc) endStatus() string {
	select {
	case <-p.exited:
	default:
		return "is still running"
	}
	if p.waitErr == nil {
		return "exited with status 0"
	}
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	return p.waitErr.Error()
}

// exitedWithError reports whether the process has exited by itself with a
// status other than 0 (not killed by a signal): a server that says no.
func (p *proc) exitedWithError() bool {
	select {
	case <-p.exited:
	default:
		return false
	}
	var ee *exec.ExitError
	if !errors.As(p.waitErr, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Exited() && ws.ExitStatus() != 0
}

// stderrTail is the last of the server's stderr. When the process has
// exited, its final lines (usually the reason) may still be in the pipe:
// they are read first. The wait is bounded, since a grandchild may still
// hold stderr open; the bound is generous (the reader must be scheduled,
// and a machine starting forty servers at once under the race detector
// took more than 200 ms), and only a server that left such a grandchild
// behind ever waits it out.
const stderrDrainWait = time.Second

func (p *proc) stderrTail() string {
	if p.hasExited(0) {
		t := time.NewTimer(stderrDrainWait)
		defer t.Stop()
		select {
		case <-p.stderrDone:
		case <-t.C:
		}
	}
	return p.stderr.String()
}

// kill ends the whole process group now, and, while the process has not
// been reaped, every descendant the OS can trace to it (those that left the
// group with setsid included). It is safe to call any number of times,
// before or after the process exits.
func (p *proc) kill() {
	select {
	case <-p.exited:
		// Reaped: its pid may name another process now. Its group is
		// still its own while members remain; its orphans are the
		// reaper's (Host.reapAdopted).
		killGroup(p.pid, syscall.SIGKILL)
	default:
		p.removeJail()
		if _, err := osproc.KillTree(p.pid); err != nil {
			p.log.Warn("cannot kill every process of the server", "err", err)
		}
	}
}

// stop ends the process as the MCP lifecycle asks ("closing the input stream
// to the child process..., waiting for the server to exit, or sending SIGTERM
// if the server does not exit within a reasonable time..., sending SIGKILL if
// the server does not exit within a reasonable time after SIGTERM"), then
// kills whatever is left of its group: grandchildren that ignore SIGTERM and
// hold stdout must not outlive the request. The total wait is bounded by
// 2×grace plus a short reap; it is meant to run after the caller has its
// answer.
func (p *proc) stop(grace time.Duration) {
	p.closeInput()
	if !p.hasExited(grace) {
		p.removeJail() // an ephemeral jail outlives a jail(8) that is signalled
		if err := killGroup(p.pid, syscall.SIGTERM); err != nil && errors.Is(err, syscall.EPERM) {
			// A child that changed user (jexec -U, mdo) cannot be signalled
			// by an unprivileged colibri: closing stdin was the only polite
			// stop, and the operator must grant the rest (docs/freebsd.md).
			p.log.Warn("cannot signal the server's process group", "err", err)
		}
		if !p.hasExited(grace) {
			p.kill()
		}
	}
	p.kill()
	if !p.hasExited(reapWait) {
		p.log.Warn("the server's process did not exit after SIGKILL", "waited", reapWait)
	}
	// A process that escaped the group may still hold stdout: the drain
	// ends here, as the stderr reader does below.
	p.closePipes()
	// A process that escaped the group (setsid) may still hold stderr; stop
	// reading it rather than leak the reader.
	t := time.NewTimer(reapWait)
	defer t.Stop()
	select {
	case <-p.stderrDone:
	case <-t.C:
		p.stderrFile.Close()
		<-p.stderrDone
	}
}

const reapWait = 2 * time.Second

// closePipes closes our ends of stdin and stdout: the child sees EOF on
// stdin, and the SDK's reader returns.
func (p *proc) closePipes() {
	p.closeOnce.Do(func() {
		p.inputClosed.Store(true)
		p.stdin.Close()
		p.stdout.Close()
	})
}

// drainLimit bounds what colibri reads from a server's stdout once it has
// closed the server's stdin: room for a last log message, or the answer a
// cancelled call was writing. Past it the pipe is closed, and a server still
// writing meets EPIPE (SIGPIPE, for most).
const drainLimit = 1 << 20

// closeInput is the polite stop, the first step of the MCP shutdown: our
// end of the server's stdin closes, and the server reads EOF. Its stdout
// stays open, read and discarded (up to drainLimit) until the server
// closes it, so that what it writes as it leaves (servers log their
// shutdown; one cancelled mid-call may still answer) does not kill it with
// SIGPIPE on a pipe colibri closed under it. closePipes, which stop calls
// once the process has ended, closes stdout in the end.
func (p *proc) closeInput() {
	p.inputOnce.Do(func() {
		p.inputClosed.Store(true)
		p.stdin.Close()
		go func() {
			if n, _ := io.CopyN(io.Discard, p.stdout, drainLimit); n == drainLimit {
				p.closePipes()
			}
		}()
	})
}

// proc is the first kind of upstream.
var _ upstream = (*proc)(nil)

func (p *proc) transport() mcp.Transport {
	// colibri's own limit (limitReader) is in force, and kills the group the
	// moment it is crossed. lineconn moves each message with fewer passes
	// over its bytes than the SDK's IOTransport (issue 16).
	return &lineconn.Transport{
		Reader: &limitReader{p: p, limit: p.limit},
		Writer: pipeWriter{p},
		Bulk:   p.bulk,
	}
}

func (p *proc) done() <-chan struct{}                     { return p.exited }
func (p *proc) ended(d time.Duration) bool                { return p.hasExited(d) }
func (p *proc) endedWithError() bool                      { return p.exitedWithError() }
func (p *proc) describeEnd() string                       { return p.exitStatus() }
func (p *proc) read() int64                               { return p.bytesRead.Load() }
func (p *proc) oversize() bool                            { return p.tooLarge.Load() }
func (p *proc) track(ctx context.Context) context.Context { return ctx }
func (p *proc) toolError(context.Context) bool            { return true }
func (p *proc) tail() string                              { return p.stderrTail() }
func (p *proc) closeConn()                                { p.closePipes() }
func (p *proc) lowers() bool                              { return true } // lineconn, with the host's table
func (p *proc) logger() *slog.Logger                      { return p.log }
func (p *proc) redactor() *redactor                       { return p.redact }
func (p *proc) procID() int                               { return p.pid }
func (p *proc) usesSlot() bool                            { return true }

// unstick guards a phase against a server that stopped reading its stdin:
// the SDK writes a request synchronously, and no deadline unblocks a write to
// a full pipe. If, once ctx has ended, the phase is still running and a
// write to the server has made no progress for unstickDelay, the process is
// killed, which fails the write. A phase that is merely slow to return (its
// cancellation queued behind other calls' writes to a busy warm server) is
// left to return: killing a shared process would fail every call on it;
// but not for longer than unstickCeiling. Call the returned func when the
// phase returns.
func (p *proc) unstick(ctx context.Context) (stop func()) {
	var mu sync.Mutex
	var t *time.Timer
	var ended time.Time // when ctx ended
	done := false
	var check func()
	check = func() {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		since := p.stalledSince.Load()
		if since != 0 && time.Since(time.Unix(0, since)) >= unstickDelay || time.Since(ended) >= unstickCeiling {
			p.kill()
			return
		}
		t = time.AfterFunc(unstickDelay, check)
	}
	stopAfter := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			ended = time.Now()
			t = time.AfterFunc(unstickDelay, check)
		}
	})
	return func() {
		stopAfter()
		mu.Lock()
		defer mu.Unlock()
		done = true
		if t != nil {
			t.Stop()
		}
	}
}

// unstickDelay is how long a write to a server's stdin may make no
// progress, once its phase's context has ended, before the process is
// killed to unblock it.
const unstickDelay = time.Second

// unstickCeiling is how long a phase may take to return after its context
// ended, progress or not: a server that reads its stdin at a trickle (a
// 64 KiB piece a second) would otherwise hold a timed-out call for as long
// as the bytes queued for it take, minutes for a few large calls.
const unstickCeiling = 10 * time.Second

// diagnose classifies a process's failure that is not colibri's own doing:
// the server answered with a JSON-RPC error, or the connection broke (the
// process exited, closed stdout, or wrote something that is not MCP).
func (p *proc) diagnose(_ context.Context, e *failure.Error, phase failure.Phase, err error) {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		// The server answered, with a JSON-RPC error.
		e.Kind = failure.KindHandshake
		e.Err = fmt.Errorf("%s failed: the server answered error %d: %s", phaseMethod(phase), rpcErr.Code, p.redact.apply(rpcErr.Message))
		return
	}
	// Only a server that closed stdout, or stdin (colibri's write to it
	// failed), may have exited on its own; otherwise colibri closed the
	// pipes after unreadable output, and the exit that followed is
	// colibri's doing. However colibri's first write and the exit
	// raced, a server that went away is reported as exited.
	closedByServer := p.stdoutEOF.Load() || p.stdinBroken.Load()
	exited := closedByServer && p.hasExited(exitWait)
	switch {
	case phase == failure.PhaseInitialize && exited:
		e.Kind = failure.KindHandshake
		e.Err = fmt.Errorf("the server %s during initialize", p.exitStatus())
		// A server that exits with an error status before it
		// speaks is refusing to start (a missing key, a bad
		// flag): trying again changes nothing.
		e.Retry.Transient = !p.exitedWithError()
	case phase == failure.PhaseInitialize && closedByServer:
		e.Kind = failure.KindHandshake
		e.Err = errors.New("the server closed its stdio during initialize")
	case phase == failure.PhaseInitialize:
		e.Kind = failure.KindHandshake
		e.Err = fmt.Errorf("the server wrote something that is not MCP on stdout: %w", err)
		e.Hint = "the server must write only MCP messages on stdout; logs belong on stderr"
	case exited:
		e.Kind = failure.KindCrashed
		e.Err = fmt.Errorf("the server %s during %s", p.exitStatus(), phaseMethod(phase))
		e.Retry.Transient = true
	case closedByServer:
		e.Kind = failure.KindCrashed
		e.Err = fmt.Errorf("the server closed its stdio during %s", phaseMethod(phase))
	default:
		e.Kind = failure.KindCrashed
		e.Err = fmt.Errorf("the server broke the protocol during %s: %w", phaseMethod(phase), err)
		if msg, number, ok := unreadable.Describe(err); ok {
			// A value colibri could not read, said without the decoder's
			// Go types; a number beyond 64 bits is too large for it
			// (docs/protocol.md).
			e.Err = fmt.Errorf("reading the answer to %s: %s", phaseMethod(phase), msg)
			if number {
				e.Kind = failure.KindTooLarge
			}
		}
	}
}
