// Package failure is colibri's vocabulary of failure: the contract's error
// kinds (docs/registry.md#error-kinds), the phase of a request that failed, and the
// one error type that carries both with the server, tool, a hint and what a
// retry may do. Every layer that hosts or judges a call returns it; the faces
// turn it into a tool result or an exit code. What a failure quotes is cut
// short first (Clip, clip.go), and a value the decoder could not read is said
// without Go type names (DescribeUnreadable, unreadable.go).
//
//	err := &failure.Error{Kind: failure.KindTimeout, Server: "git", Phase: failure.PhaseCall,
//		Err: errors.New("phase timed out"), Hint: "raise call_timeout_ms"}
//	if failure.KindOf(err) == failure.KindTimeout { … }
package failure

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind is what went wrong, in the words of colibri's contract. Callers act on
// it; the message is for people.
type Kind string

// The error kinds of colibri's contract (docs/registry.md#error-kinds).
const (
	KindConfig           Kind = "config"
	KindUnknownServer    Kind = "unknown_server"
	KindUnknownTool      Kind = "unknown_tool"
	KindInvalidArguments Kind = "invalid_arguments"
	KindCallDisabled     Kind = "call_disabled"
	KindSpawn            Kind = "spawn"
	KindHandshake        Kind = "handshake"
	KindTimeout          Kind = "timeout"
	KindCrashed          Kind = "crashed"
	KindCancelled        Kind = "cancelled"
	KindJail             Kind = "jail"
	KindOverloaded       Kind = "overloaded"
	KindTooLarge         Kind = "too_large"
	KindUnavailable      Kind = "unavailable"
	KindUnreachable      Kind = "unreachable"
	KindUnauthorized     Kind = "unauthorized"
	KindDenied           Kind = "denied"
	KindSandbox          Kind = "sandbox"
	KindToolChanged      Kind = "tool_changed"
	KindProtocol         Kind = "protocol"
	KindInternal         Kind = "internal"
)

// Phase is the step of a request that failed.
type Phase string

const (
	PhaseSpawn      Phase = "spawn"
	PhaseInitialize Phase = "initialize"
	PhaseList       Phase = "list"
	PhaseCall       Phase = "call"
)

// Method is the MCP request of phase p ("tools/call" for call).
func (p Phase) Method() string {
	switch p {
	case PhaseInitialize:
		return "initialize"
	case PhaseList:
		return "tools/list"
	case PhaseCall:
		return "tools/call"
	}
	return string(p)
}

// Error is a failure of colibri's own while hosting a server (never a hosted
// tool's own isError result). It says what, where and, when it can, what to do.
type Error struct {
	Kind       Kind
	Server     string
	Tool       string
	Phase      Phase
	Err        error
	Hint       string // what the user can do about it, when that is known
	StderrTail string // the last lines the server wrote to stderr
	Attempts   int    // tries made, when more than one
	HTTPStatus int    // a remote server's last HTTP status, when there was one

	// Retry says what another attempt may do; it is set by whoever
	// diagnosed the failure and read by the layer that retries.
	Retry Retry
}

// Retry is what another attempt of a failed phase may do.
type Retry struct {
	// Transient: worth another attempt of initialize or tools/list.
	Transient bool
	// For tools/call: Unsent means the request surely never reached the
	// server; Idempotent that it may have, but a tool that declares
	// readOnlyHint or idempotentHint may be called again.
	Unsent, Idempotent bool
	// After is the wait the server asked for first (429, 503).
	After time.Duration
}

func (e *Error) Error() string {
	var b strings.Builder
	// A denial says only that the policy denies it (docs/operations.md#policy),
	// in a message that names the tool and server itself.
	if e.Server != "" && e.Kind != KindDenied {
		// Names are a caller's or a hosted server's: quoted clipped.
		fmt.Fprintf(&b, "server %q", ClipName(e.Server))
		if e.Tool != "" {
			fmt.Fprintf(&b, " tool %q", ClipName(e.Tool))
		}
		if e.Phase != "" {
			fmt.Fprintf(&b, " (%s)", e.Phase)
		}
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString(string(e.Kind))
	}
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err: its *Error's kind, or internal for any
// other error (which would be a bug of colibri's).
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}
