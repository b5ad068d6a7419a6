package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/redact"
)

// Child is one hosted server process: its pipes, its process group, its
// stderr tail, and the goroutine that reaps it. colibri starts it itself
// (rather than through mcp.CommandTransport) so that the pipes are plain files that Wait
// never touches, the whole group can be killed, and stdout can be bounded as
// it is read (see limitReader).
type Child struct {
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
	written      atomic.Int64 // written to the server's stdin so far
	writing      atomic.Int32 // writes to the server's stdin under way (Sent)

	// stdinMu guards closing stdin, and what was left unread in it once
	// the server was gone (Unread), told once: it stays so.
	stdinMu     sync.Mutex
	stdinClosed bool
	unreadTold  bool
	unread      int64
	unreadKnown bool

	secrets *redact.Set // the secrets colibri expanded into its environment
	limits  string      // its sandbox's resource limits, for the message about its end
	limit   int64       // MaxResultBytes: one message from stdout at most

	remove     []string  // removes what outlives a kill (an ephemeral jail), or nil
	removeOnce sync.Once // removeJail runs once

	inputOnce   sync.Once
	inputClosed atomic.Bool // colibri closed the server's stdin (closeInput)
	closeOnce   sync.Once
}

// Accessors of a started Child.

func (p *Child) Server() string        { return p.server }
func (p *Child) PID() int              { return p.pid }
func (p *Child) Logger() *slog.Logger  { return p.log }
func (p *Child) Secrets() *redact.Set  { return p.secrets }
func (p *Child) Done() <-chan struct{} { return p.exited }
func (p *Child) BytesRead() int64      { return p.bytesRead.Load() }
func (p *Child) Oversize() bool        { return p.tooLarge.Load() }

// ClosedByServer reports whether the server closed its stdout, or its
// stdin (a write to it failed): it may have exited on its own.
func (p *Child) ClosedByServer() bool { return p.stdoutEOF.Load() || p.stdinBroken.Load() }

// ExitedCleanly reports whether it has exited with status 0.
func (p *Child) ExitedCleanly() bool { return p.Ended(0) && p.waitErr == nil }

// Stdout is the server's stdout as a transport reads it: bounded by
// Options.MaxMessage per line; closing it is the polite stop (stdin closes,
// stdout is drained until the server leaves).
func (p *Child) Stdout() io.ReadCloser { return &limitReader{p: p, limit: p.limit} }

// Stdin is the server's stdin as a transport writes it.
func (p *Child) Stdin() io.WriteCloser { return pipeWriter{p} }

// Options say how to run a Child.
type Options struct {
	// Server is the registry entry's name, for errors and logs.
	Server string
	// Log receives the child's lines; server=, pid= and then LogAttrs
	// are added. Nil discards them.
	Log      *slog.Logger
	LogAttrs []any
	// Secrets are hidden in its stderr tail and logged lines.
	Secrets *redact.Set
	// MaxMessage bounds one message (one line) read from its stdout: past
	// it the group is killed and the read fails with ErrTooLarge.
	MaxMessage int64
	// Limits describes its resource limits ("" for none), named in
	// ExitStatus when it ends in failure.
	Limits string
	// Remove is the command that removes what outlives a kill of the
	// child (an ephemeral jail: jail -r), or nil.
	Remove []string
	// Reaped, if set, is called once the child is reaped, before Done
	// closes, with the child's logger (server=, pid=, LogAttrs).
	Reaped func(log *slog.Logger)
}

// StartChild starts cmd (built, never started: internal/launch) as the
// leader of a session of its own, with three plain pipes. A failure is a
// *failure.Error of kind spawn.
func StartChild(cmd *exec.Cmd, opts Options) (*Child, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, spawnErr(opts.Server, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, spawnErr(opts.Server, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, spawnErr(opts.Server, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = Start(cmd)          // colibri's own child: never taken for an orphan
	closeAll(inR, outW, errW) // the child holds its own copies now
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, spawnErr(opts.Server, err)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p := &Child{
		server:     opts.Server,
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		stdin:      inW,
		stdout:     outR,
		stderr:     newTail(StderrTailBytes),
		stderrFile: errR,
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
		secrets:    opts.Secrets,
		limit:      opts.MaxMessage,
		limits:     opts.Limits,
		remove:     opts.Remove,
		log:        log.With("server", opts.Server, "pid", cmd.Process.Pid).With(opts.LogAttrs...),
	}
	p.stderr.redact, p.stderr.held = opts.Secrets.Apply, opts.Secrets.Held
	go func() {
		p.waitErr = cmd.Wait()
		Reaped(cmd.Process)
		if opts.Reaped != nil {
			opts.Reaped(p.log)
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

// Ended reports whether the process has been reaped, waiting at most d
// for it: a process whose stdout just closed is usually a moment from exit.
func (p *Child) Ended(d time.Duration) bool { return closedWithin(p.exited, d) }

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

// DescribeEnd says how the process ended; one that failed under a
// sandbox's resource limits names them: past one, the kernel ends it.
func (p *Child) DescribeEnd() string {
	s := p.endStatus()
	if p.limits != "" && s != "is still running" && s != "exited with status 0" {
		s += " (its sandbox limits it to " + p.limits + ")"
	}
	return s
}

func (p *Child) endStatus() string {
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

// EndedWithError reports whether the process has exited by itself with a
// status other than 0 (not killed by a signal): a server that says no.
func (p *Child) EndedWithError() bool {
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

// Tail is the last of the server's stderr, redacted.
func (p *Child) Tail() string {
	if p.Ended(0) {
		t := time.NewTimer(stderrDrainWait)
		defer t.Stop()
		select {
		case <-p.stderrDone:
		case <-t.C:
		}
	}
	return p.stderr.String()
}

// Kill ends the whole process group now, and, while the process has not
// been reaped, every descendant the OS can trace to it (those that left the
// group with setsid included). It is safe to call any number of times,
// before or after the process exits.
func (p *Child) Kill() {
	select {
	case <-p.exited:
		// Reaped: its pid may name another process now. Its group is
		// still its own while members remain; its orphans are the
		// reaper's (ReapAdopted).
		killGroup(p.pid, syscall.SIGKILL)
	default:
		p.removeJail()
		if _, err := KillTree(p.pid); err != nil {
			p.log.Warn("cannot kill every process of the server", "err", err)
		}
	}
}

// Stop ends the process as the MCP lifecycle asks ("closing the input stream
// to the child process..., waiting for the server to exit, or sending SIGTERM
// if the server does not exit within a reasonable time..., sending SIGKILL if
// the server does not exit within a reasonable time after SIGTERM"), then
// kills whatever is left of its group: grandchildren that ignore SIGTERM and
// hold stdout must not outlive the request. The total wait is bounded by
// 2×grace plus a short reap; it is meant to run after the caller has its
// answer.
func (p *Child) Stop(grace time.Duration) {
	p.closeInput()
	if !p.Ended(grace) {
		p.removeJail() // an ephemeral jail outlives a jail(8) that is signalled
		if err := killGroup(p.pid, syscall.SIGTERM); err != nil && errors.Is(err, syscall.EPERM) {
			// A child that changed user (jexec -U, mdo) cannot be signalled
			// by an unprivileged colibri: closing stdin was the only polite
			// stop, and the operator must grant the rest (docs/freebsd.md).
			p.log.Warn("cannot signal the server's process group", "err", err)
		}
		if !p.Ended(grace) {
			p.Kill()
		}
	}
	p.Kill()
	if !p.Ended(reapWait) {
		p.log.Warn("the server's process did not exit after SIGKILL", "waited", reapWait)
	}
	// A process that escaped the group may still hold stdout: the drain
	// ends here, as the stderr reader does below.
	p.ClosePipes()
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

// Written is how many bytes were written to the server's stdin so far.
func (p *Child) Written() int64 { return p.written.Load() }

// Sent is Written, and whether it counts every byte in the pipe (settled):
// not while a write is under way, whose bytes may be in the pipe, even
// read, before they are counted. It waits up to wait for one to end (a
// write to a pipe with no reader fails at once). Asked after Unread once
// that is known, it is exact: no byte can enter a pipe that has no reader.
// It stops waiting when ctx ends.
func (p *Child) Sent(ctx context.Context, wait time.Duration) (n int64, settled bool) {
	for deadline := time.Now().Add(wait); p.writing.Load() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return p.written.Load(), false
		}
	}
	return p.written.Load(), true
}

// Unread is how many of the bytes written to the server's stdin no one
// ever read, when that can be told (ok): only once the server is gone
// (reaped, or a write to its stdin failed) and no process at all is left
// that could read its stdin, so that what is unread then stays so, and
// only where the OS says what a pipe holds (Linux: FIONREAD). Bytes unread
// are the last written: a request whose bytes all are never reached the
// server (host: a call that may be made again on a fresh process).
//
// A reaped leader is not enough: a process it started (a launcher's real
// server, npx's or uv's child, a wrapper script's) may hold the pipe and
// read the request afterwards. What is left of a reaped server's group is
// killed first, and the count waits a moment (lastReaderWait) for the last
// reader to go; one that left the group (setsid) leaves it unknown.
func (p *Child) Unread() (n int64, ok bool) {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if !p.unreadTold && (p.stdinClosed || !p.gone()) {
		return 0, false
	}
	return p.unreadForGood()
}

// lastReaderWait bounds how long Unread waits, once the server is gone,
// for the last process holding its stdin to go. Killed members of its
// group take a few milliseconds, past 80 on a loaded 2-core machine
// running the race detector; only a holder that left the group waits it
// out, once (the count is told once).
const lastReaderWait = time.Second

// unreadForGood is Unread once the server is gone; stdinMu is held.
func (p *Child) unreadForGood() (int64, bool) {
	if !p.unreadTold {
		if p.Ended(0) {
			// The leader is reaped: the rest of its group is what is
			// left of a server that is gone, and one of them may hold
			// its stdin.
			killGroup(p.pid, syscall.SIGKILL)
		}
		p.unread, p.unreadKnown = pipeUnread(p.stdin, lastReaderWait)
		p.unreadTold = true
	}
	return p.unread, p.unreadKnown
}

// gone reports whether the server can read no more of its stdin: it has
// been reaped, or a write to its stdin failed (no reader is left). A server
// that only closed its stdout may still be reading.
func (p *Child) gone() bool {
	select {
	case <-p.exited:
		return true
	default:
		return p.stdinBroken.Load()
	}
}

// exitingWait bounds how long closing the stdin of a server that closed
// its stdout waits for it to be reaped, to learn what it left unread.
const exitingWait = 100 * time.Millisecond

// closeStdin closes our end of the server's stdin, first noting what
// was left unread in it (Unread).
func (p *Child) closeStdin() {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdinClosed {
		return
	}
	if !p.gone() && p.stdoutEOF.Load() {
		// It closed its stdout: it is exiting, and what it left unread
		// is known once it has (a moment, or the bound).
		p.Ended(exitingWait)
	}
	if p.gone() {
		p.unreadForGood()
	}
	p.stdinClosed = true
	p.stdin.Close()
}

// ClosePipes closes our ends of stdin and stdout: the child sees EOF on
// stdin, and the SDK's reader returns.
func (p *Child) ClosePipes() {
	p.closeOnce.Do(func() {
		p.inputClosed.Store(true)
		p.closeStdin()
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
func (p *Child) closeInput() {
	p.inputOnce.Do(func() {
		p.inputClosed.Store(true)
		p.closeStdin()
		go func() {
			if n, _ := io.CopyN(io.Discard, p.stdout, drainLimit); n == drainLimit {
				p.ClosePipes()
			}
		}()
	})
}

// Unstick guards a phase against a server that stopped reading its stdin:
// the SDK writes a request synchronously, and no deadline unblocks a write to
// a full pipe. If, once ctx has ended, the phase is still running and a
// write to the server has made no progress for unstickDelay, the process is
// killed, which fails the write. A phase that is merely slow to return (its
// cancellation queued behind other calls' writes to a busy warm server) is
// left to return: killing a shared process would fail every call on it;
// but not for longer than unstickCeiling. Call the returned func when the
// phase returns.
func (p *Child) Unstick(ctx context.Context) (stop func()) {
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
			p.Kill()
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

// limitReader is the hosted server's stdout as the SDK reads it, bounded:
// the moment one message (one line) passes limit bytes, the process group is
// killed and reading fails. Nothing past the limit is ever buffered.
type limitReader struct {
	p     *Child
	limit int64
	line  int64 // bytes of the current line so far
}

// ErrTooLarge fails the read of a message past Options.MaxMessage.
var ErrTooLarge = errors.New("message larger than COLIBRI_MCP_MAX_RESULT_BYTES")

func (r *limitReader) Read(b []byte) (int, error) {
	if r.p.inputClosed.Load() {
		// The connection is closed; what the server still writes is the
		// drain's (closeInput), not a message's.
		return 0, os.ErrClosed
	}
	n, err := r.p.stdout.Read(b)
	if r.p.inputClosed.Load() {
		// colibri closed the connection while this read waited (the SDK's
		// reader is always in one): what it got is the drain's as well.
		// Reads of the pipe take turns, so this one had the server's first
		// words after the close; taken as a message they could only be
		// parsed for nothing, or, past the limit, kill a server that was
		// leaving as it chose.
		return 0, os.ErrClosed
	}
	r.p.bytesRead.Add(int64(n))
	if err == io.EOF {
		// The server closed its stdout (usually: it exited), as opposed
		// to leaving after colibri closed its stdin (a protocol error, the
		// end of the session).
		r.p.stdoutEOF.Store(true)
	}
	chunk := b[:n]
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			r.line += int64(len(chunk))
			break
		}
		if r.line+int64(i) > r.limit {
			r.line += int64(i)
			break
		}
		r.line = 0
		chunk = chunk[i+1:]
	}
	if r.line > r.limit {
		r.p.tooLarge.Store(true)
		r.p.Kill()
		return 0, ErrTooLarge
	}
	return n, err
}

// Close is the SDK closing the connection: stdin closes, and stdout is
// drained until the server leaves (closeInput).
func (r *limitReader) Close() error {
	r.p.closeInput()
	return nil
}

// pipeWriter is the hosted server's stdin as the SDK writes it.
type pipeWriter struct{ p *Child }

// Write writes b in pieces of at most a pipe's buffer, so that unstick
// can tell a write that is making progress from one the server stopped
// reading (p.stalledSince: when the last piece went).
func (w pipeWriter) Write(b []byte) (int, error) {
	const piece = 64 << 10
	w.p.writing.Add(1)
	defer w.p.writing.Add(-1) // after the last piece is counted
	n := 0
	for n < len(b) {
		w.p.stalledSince.Store(time.Now().UnixNano())
		m, err := w.p.stdin.Write(b[n:min(len(b), n+piece)])
		n += m
		w.p.written.Add(int64(m))
		if err != nil {
			w.p.stalledSince.Store(0)
			if errors.Is(err, syscall.EPIPE) {
				// The server closed its stdin: it exited, or is about to.
				w.p.stdinBroken.Store(true)
			}
			return n, err
		}
	}
	w.p.stalledSince.Store(0)
	return n, nil
}

func (w pipeWriter) Close() error {
	w.p.closeInput()
	return nil
}

// removeJail runs jail -r for a process colibri had to kill: jail(8) holds
// the jail with a temporary persist until its command returns, so an
// ephemeral jail would otherwise outlive its request (and under mdo or the
// helper, jail(8) is root's, out of an unprivileged colibri's reach).
// Bounded; run once per process.
func (p *Child) removeJail() {
	if p.remove == nil {
		return
	}
	p.removeOnce.Do(func() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, p.remove[0], p.remove[1:]...)
			cmd.Env = p.cmd.Env
			var output bytes.Buffer
			cmd.Stdout, cmd.Stderr = &output, &output
			// Started as colibri's own child: ReapAdopted kills every
			// child it did not start through Start.
			err := Start(cmd)
			if err == nil {
				err = cmd.Wait()
				Reaped(cmd.Process)
			}
			if out := output.Bytes(); err != nil {
				p.log.Warn("cannot remove the ephemeral jail", "argv", p.remove, "err", err, "output", strings.TrimSpace(string(out)))
				return
			}
			p.log.Debug("removed the ephemeral jail", "argv", p.remove)
		}()
	})
}
