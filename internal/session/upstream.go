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
// (internal/remote). Like go-plugin's runner.Runner, it gives the session a
// transport, says when it is done, diagnoses its own failures into the
// contract's kinds, and can be stopped and killed; every other layer
// (request, warm pool, retries, relay, list cache, schema checks) works
// through it alone. It is declared here, where it is consumed; each
// implementation lives in a package of its own.
type Upstream interface {
	// Transport is the MCP transport to connect the client session over.
	Transport() mcp.Transport
	// Done is closed once the upstream has ended: the process was reaped,
	// or the remote session is gone for good.
	Done() <-chan struct{}
	// EndedWithError reports whether it ended of its own accord with an
	// error (a process's status other than 0): the phase under way ends at
	// once rather than at its timeout.
	EndedWithError() bool
	// DescribeEnd says how it ended ("exited with status 1").
	DescribeEnd() string
	// BytesRead is how much was read from it so far (MaxResultBytes).
	BytesRead() int64
	// Oversize reports whether one message passed MaxResultBytes.
	Oversize() bool
	// Track returns the context a phase's requests run under, with what
	// the upstream needs to diagnose that phase later.
	Track(ctx context.Context) context.Context
	// Diagnose classifies err, the failure of phase (run under ctx, from
	// Track), once colibri's own reasons (too large, timeout, cancelled)
	// are ruled out: it sets e's Kind, Err, Hint and Retry.
	Diagnose(ctx context.Context, e *failure.Error, phase failure.Phase, err error)
	// ToolError reports whether a JSON-RPC error that tools/call returned
	// under ctx is the hosted tool's own answer (rather than a refusal of
	// the transport's, such as an HTTP error status with a JSON-RPC body).
	ToolError(ctx context.Context) bool
	// Tail is the upstream's last words (a process's stderr tail), redacted.
	Tail() string
	// Unstick guards a phase against writes that no context ends; call
	// the returned func when the phase returns.
	Unstick(ctx context.Context) (stop func())
	// Lowers reports whether the transport writes the references of the
	// bulk table as the strings they stand for (internal/bulk), so that
	// the caller's arguments may be sent with references.
	Lowers() bool
	// CloseConn drops the connection under the session (pipes, idle HTTP
	// connections) without waiting.
	CloseConn()
	// Stop ends it politely within grace (twice, for a process), then
	// for good; Kill ends it now. Both are safe to repeat.
	Stop(grace time.Duration)
	Kill()
	// Logger carries server= (and pid= for a process).
	Logger() *slog.Logger
	// Secrets are those colibri expanded into the upstream's environment
	// or headers.
	Secrets() *redact.Set
	// PID is the process id, 0 for a remote server.
	PID() int
}

// Connector is an Upstream told of the session initialize made (a remote
// one sends its version in MCP-Protocol-Version, and ends with it).
type Connector interface {
	Connected(cs *mcp.ClientSession)
}

// RelayBelow is an Upstream that hands the server's progress and log
// notifications to relay itself, below its transport, in the order it reads
// them (relay reports whether it took one). Its connection then reaches
// go-sdk unwrapped: the SDK's own hooks on it (the standalone GET stream of
// Streamable HTTP) stay in force. Other upstreams are relayed over their
// connection (relayTransport).
type RelayBelow interface {
	RelayBelow(relay func(method string, params json.RawMessage) bool)
}

// Ended reports whether u has ended (its Done is closed), waiting at most d
// for it: a process whose stdout just closed is usually a moment from exit.
func Ended(u Upstream, d time.Duration) bool {
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
