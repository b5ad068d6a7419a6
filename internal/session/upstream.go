package session

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/redact"
)

// Upstream is what a session talks MCP to: a hosted process (host's
// process upstream, over internal/proc) or a remote server over HTTP
// (internal/remote). It has go-plugin's runner.Runner shape: named parts,
// composed. Conn is what the session's messages travel over, Lifecycle
// whether it still runs and how it is ended, Diagnosis what it knows of
// its own failures; Logger and Secrets say who it is. Every other layer
// (request, warm pool, retries, relay, list cache, schema checks) works
// through it alone. It is declared here, where it is consumed; each
// implementation lives in a package of its own.
type Upstream interface {
	Conn
	Lifecycle
	Diagnosis

	// Logger carries server= (and pid= for a process). The session logs
	// its teardown and a refused logging/setLevel with it; the pool its
	// warm server's start, idle close and list_changed floods; host a
	// spare's start and take-over.
	Logger() *slog.Logger
	// Secrets are those colibri expanded into the upstream's environment
	// or headers. Open hands them to the router (a relayed log message is
	// redacted with them); a tool's JSON-RPC error is redacted with them
	// when CallTool returns it as a RemoteError.
	Secrets() *redact.Set
}

// Conn is the part of an Upstream that the session's messages travel
// over: the transport, what was read through it, and the guards on it.
// (Not an mcp.Connection: it is what lies under the one Transport
// connects.)
type Conn interface {
	// Transport is the MCP transport to connect the client session over.
	// Open calls it once, before initialize.
	Transport() mcp.Transport
	// Lowers reports whether the transport writes the references of the
	// bulk table as the strings they stand for (internal/bulk). CallTool
	// asks before it sends: when false, the caller's references are put
	// back into the arguments first.
	Lowers() bool
	// BytesRead is how much was read from it so far. ListTools reads it
	// before listing and after each page: the whole list is bounded by
	// MaxResultBytes, not only each page.
	BytesRead() int64
	// Oversize reports whether one message passed MaxResultBytes. classify
	// asks it first of every failure (too_large), and CallTool and
	// ReadResource before they take a JSON-RPC error for the server's own.
	Oversize() bool
	// Unstick guards a phase against writes that no context ends. Every
	// phase after initialize (ListTools, CallTool, ReadResource) calls it
	// as it starts and calls the returned func when it returns.
	Unstick(ctx context.Context) (stop func())
	// CloseConn drops the connection under the session (pipes, idle HTTP
	// connections) without waiting. Teardown calls it when there is no
	// client session to close, or when closing one took too long.
	CloseConn()
}

// Lifecycle is the part of an Upstream that says whether it still runs,
// and ends it.
type Lifecycle interface {
	// Done is closed once the upstream has ended: the process was reaped,
	// or the remote session is gone for good. The session waits on it
	// (one goroutine per session, endOnExit), the pool drops a warm
	// session whose upstream is done, spares are discarded on it, and
	// Ended waits on it.
	Done() <-chan struct{}
	// EndedWithError reports whether it ended of its own accord with an
	// error (a process's status other than 0). endOnExit asks it once
	// Done is closed: the phase under way then ends at once rather than
	// at its timeout.
	EndedWithError() bool
	// ClosedByServer reports whether the server closed its end of the
	// connection (a process its stdout, or its stdin: a write to it
	// failed): it answers nothing more, though it may not have ended yet
	// (a process exits a moment later). The pool lends no session whose
	// upstream did; a remote one says false.
	ClosedByServer() bool
	// DescribeEnd says how it ended ("exited with status 1"): classify,
	// the pool and host's spares put it in a failure's message, teardown
	// in its debug line.
	DescribeEnd() string
	// Stop ends it politely within grace (twice, for a process), then
	// for good: Close and Abort call it in the background once the
	// client session is closed, host on a discarded spare and on the
	// remote that Check dialled. Kill ends it now: Abort, a tool list past
	// its bound, a client session that will not close. Both are safe to
	// repeat.
	Stop(grace time.Duration)
	Kill()
	// PID is the process id, 0 for a remote server: the pool's status of
	// its warm processes.
	PID() int
}

// Diagnosis is the part of an Upstream that knows what went wrong with
// it, once colibri's own reasons (too large, timeout, cancelled) are
// ruled out. The session asks it only through classify and CallTool.
type Diagnosis interface {
	// Track returns the context a phase's requests run under, with what
	// the upstream needs to diagnose that phase later (a remote one's
	// record of the phase's HTTP exchanges). Each phase calls it before
	// its request is sent.
	Track(ctx context.Context) context.Context
	// Diagnose classifies err, the failure of phase (run under ctx, from
	// Track): it sets e's Kind, Err, Hint and Retry. classify calls it
	// last, when no reason of colibri's own explains the failure.
	Diagnose(ctx context.Context, e *failure.Error, phase failure.Phase, err error)
	// ToolError reports whether a JSON-RPC error that tools/call returned
	// under ctx is the hosted tool's own answer (rather than a refusal of
	// the transport's, such as an HTTP error status with a JSON-RPC body).
	// CallTool asks it before it returns a RemoteError.
	ToolError(ctx context.Context) bool
	// NeverRead reports whether the server surely never read the request
	// of the phase run under ctx (from Track): it ended with the request
	// still unread in its stdin. classify then marks the failure
	// Retry.Unsent, which host retries whatever the tool.
	NeverRead(ctx context.Context) bool
	// Tail is the upstream's last words (a process's stderr tail),
	// redacted: classify puts it in every failure it makes (StderrTail),
	// the pool and host's spares in theirs.
	Tail() string
}

// Connector is an Upstream told of the session initialize made (a remote
// one sends its version in MCP-Protocol-Version, and ends with it): Open
// tells it once initialize has succeeded.
type Connector interface {
	Connected(cs *mcp.ClientSession)
}

// RelayBelow is an Upstream that hands the server's progress and log
// notifications to relay itself, below its transport, in the order it reads
// them (relay reports whether it took one). Its connection then reaches
// go-sdk unwrapped: the SDK's own hooks on it (the standalone GET stream of
// Streamable HTTP) stay in force. Open hands it the relay before it
// connects; other upstreams are relayed over their connection
// (relayTransport).
type RelayBelow interface {
	RelayBelow(relay func(method string, params json.RawMessage) bool)
}

// Ended reports whether u has ended (its Done is closed), waiting at most d
// for it: a process whose stdout just closed is usually a moment from exit.
func Ended(u Lifecycle, d time.Duration) bool {
	select {
	case <-u.Done():
		return true
	default:
	}
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-u.Done():
		return true
	case <-t.C:
		return false
	}
}
