package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/lineconn"
	"github.com/colibri-mcp/colibri-mcp/internal/proc"
	"github.com/colibri-mcp/colibri-mcp/internal/redact"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/sandbox"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/strict"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// process is a hosted server's process (internal/proc) as a session's
// Upstream: MCP over its stdio, framed by lineconn, its failures
// classified into the contract's kinds.
type process struct {
	*proc.Child
	bulk  *bulk.Table
	relay func(method string, params json.RawMessage) bool // the session's (RelayBelow)
}

var (
	_ session.Upstream   = (*process)(nil)
	_ session.RelayBelow = (*process)(nil)
)

func (p *process) Transport() mcp.Transport {
	// The child's own limit (Options.MaxMessage) is in force, and kills the
	// group the moment it is crossed. lineconn moves each message with
	// fewer passes over its bytes than the SDK's IOTransport (issue 16),
	// and hands progress and log notifications to the session's relay
	// without go-sdk's decoding of each (a flood of them is damped there).
	return &lineconn.Transport{Reader: p.Stdout(), Writer: p.Stdin(), Bulk: p.bulk, Relay: p.relay, Repaired: func() {
		// A file name read from disk, say: not refused, but not hidden.
		p.Logger().Warn("the server's text held invalid UTF-8 or a lone surrogate, replaced with U+FFFD (docs/protocol.md, \"Strict reading\")")
	}}
}

// RelayBelow takes the session's relay, which Transport hands lineconn.
func (p *process) RelayBelow(relay func(method string, params json.RawMessage) bool) {
	p.relay = relay
}

// Track notes how much was written to the server's stdin before the
// phase's request (Diagnose: was it ever read?). An earlier request's
// write still under way is waited for (its bytes may be in the pipe, even
// read, before they are counted); ours cannot go before it ends anyway,
// writes being one at a time. Past the bound the count may fall short,
// which only makes the request look read: it is not made again.
func (p *process) Track(ctx context.Context) context.Context {
	before, _ := p.Sent(ctx, trackWait)
	return context.WithValue(ctx, writtenKey{}, before)
}

type writtenKey struct{}

// NeverRead implements session.Diagnosis: nothing written to the server
// since the phase run under ctx began (Track), its request included, was
// ever read: none was written, or all of it is still in the pipe (the
// bytes left unread in a pipe are the last written).
func (p *process) NeverRead(ctx context.Context) bool {
	before, ok := ctx.Value(writtenKey{}).(int64)
	if !ok {
		return false
	}
	// The unread count first, then what was sent: once the count is
	// known the pipe has no reader and no byte can enter it, so the two
	// agree.
	unread, known := p.Unread()
	wait := time.Duration(0)
	if known {
		wait = sentWait
	}
	written, settled := p.Sent(ctx, wait)
	sent := written - before
	switch {
	case !settled:
		return false // a write under way may have put bytes in the pipe, even read
	case sent == 0:
		return true // not a byte of it reached the pipe (the write failed, EPIPE)
	default:
		return known && unread >= sent
	}
}

// sentWait bounds how long NeverRead waits for a write under way to a pipe
// with no reader (it fails at once, EPIPE) to be counted: its goroutine
// must be scheduled, which a loaded machine may take tens of milliseconds
// to do.
const sentWait = time.Second

// trackWait bounds how long Track waits for an earlier write under way to
// be counted: one blocked on a full pipe holds our request back as long.
const trackWait = time.Second

func (p *process) ToolError(context.Context) bool { return true }
func (p *process) Lowers() bool                   { return true } // lineconn, with the host's table
func (p *process) CloseConn()                     { p.ClosePipes() }

// start starts cmd (from launch) as srv's process.
func (h *Host) start(ctx context.Context, srv *registry.Server, cmd *exec.Cmd, secrets *redact.Set) (*process, error) {
	var attrs []any
	startCtx := ctx // its "started" line names the request it starts for
	if id := reqctx.ID(ctx); id != "" && !srv.IsPersistent() {
		// A per-request process belongs to one request: its lines carry
		// that request's id. (A warm process serves many.)
		attrs = []any{reqctx.IDKey, id}
		startCtx = reqctx.WithID(ctx, "") // the id is on its logger already: once is enough
	}
	c, err := proc.StartChild(cmd, proc.Options{
		Server:     srv.Name,
		Log:        h.log,
		LogAttrs:   attrs,
		Secrets:    secrets,
		MaxMessage: h.opts.MaxResultBytes,
		Limits:     sandbox.Limits(cmd.Args),
		Remove:     h.launch.JailRemoval(cmd),
		Reaped: func(log *slog.Logger) {
			if err := sandbox.Cleanup(cmd.Args); err != nil {
				log.Warn("cannot remove the sandbox's private TMPDIR", "err", err)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if h.opts.OnSpawn != nil {
		h.opts.OnSpawn(srv.Name, c.PID())
	}
	c.Logger().DebugContext(startCtx, "started", "argv", cmd.Args)
	return &process{Child: c, bulk: h.opts.Bulk}, nil
}

// exitWait bounds how long Diagnose waits for a server that closed its
// stdio to exit, so that its status and last words can be reported.
const exitWait = time.Second

// diagnose classifies a process's failure that is not colibri's own doing:
// the server answered with a JSON-RPC error, or the connection broke (the
// process exited, closed stdout, or wrote something that is not MCP).
func (p *process) Diagnose(ctx context.Context, e *failure.Error, phase failure.Phase, err error) {
	var unclear *strict.Problem
	if errors.As(err, &unclear) {
		// A message two readers could read differently (docs/protocol.md,
		// "Strict reading"): the server will send it again, so it is not
		// retried; the connection was ended without reading it.
		e.Kind, e.Retry.Transient = failure.KindProtocol, false
		e.Err = fmt.Errorf("the server's message during %s, %w", phase.Method(), unclear)
		if phase == failure.PhaseInitialize {
			e.Kind = failure.KindHandshake
			e.Err = fmt.Errorf("protocol: the server's message during initialize, %w", unclear)
		}
		return
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		// The server answered, with a JSON-RPC error.
		e.Kind = failure.KindHandshake
		e.Err = fmt.Errorf("%s failed: the server answered error %d: %s", phase.Method(), rpcErr.Code, p.Secrets().Apply(rpcErr.Message))
		return
	}
	// Only a server that closed stdout, or stdin (colibri's write to it
	// failed), may have exited on its own; otherwise colibri closed the
	// pipes after unreadable output, and the exit that followed is
	// colibri's doing. However colibri's first write and the exit
	// raced, a server that went away is reported as exited.
	closedByServer := p.ClosedByServer()
	exited := closedByServer && p.Ended(exitWait)
	switch {
	case phase == failure.PhaseInitialize && exited:
		e.Kind = failure.KindHandshake
		e.Err = fmt.Errorf("the server %s during initialize", p.DescribeEnd())
		// A server that exits with an error status before it
		// speaks is refusing to start (a missing key, a bad
		// flag): trying again changes nothing.
		e.Retry.Transient = !p.EndedWithError()
	case phase == failure.PhaseInitialize && closedByServer:
		e.Kind = failure.KindHandshake
		e.Err = errors.New("the server closed its stdio during initialize")
	case phase == failure.PhaseInitialize:
		e.Kind = failure.KindHandshake
		e.Err = fmt.Errorf("the server wrote something that is not MCP on stdout: %w", err)
		e.Hint = "the server must write only MCP messages on stdout; logs belong on stderr"
	case exited:
		e.Kind = failure.KindCrashed
		e.Err = fmt.Errorf("the server %s during %s", p.DescribeEnd(), phase.Method())
		e.Retry.Transient = true
		if p.NeverRead(ctx) {
			// It went before it read the request (a warm server that
			// exits after its last answer, a request written meanwhile):
			// a fresh process may take it, whatever the tool.
			e.Err = fmt.Errorf("the server %s before it read %s", p.DescribeEnd(), phase.Method())
			e.Retry.Unsent = true
		}
	case closedByServer:
		e.Kind = failure.KindCrashed
		e.Err = fmt.Errorf("the server closed its stdio during %s", phase.Method())
	default:
		e.Kind = failure.KindCrashed
		e.Err = fmt.Errorf("the server broke the protocol during %s: %w", phase.Method(), err)
		if msg, number, ok := failure.DescribeUnreadable(err); ok {
			// A value colibri could not read, said without the decoder's
			// Go types; a number beyond 64 bits is too large for it
			// (docs/protocol.md).
			e.Err = fmt.Errorf("reading the answer to %s: %s", phase.Method(), msg)
			if number {
				e.Kind = failure.KindTooLarge
			}
		}
	}
}
