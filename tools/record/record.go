// Package record writes what became of each call of a hosted tool, however
// it ended (the gate's refusal, a denial, invalid input, an unknown server,
// a failure, a cancellation): one audit line (docs/operations.md#audit-log), its
// metrics (section 11) and a debug line, from the Note that the call's
// layers fill in on its way (the policy's decision, the pins' verdict).
//
//	call := &record.Call{Server: "demo", Tool: "echo", Args: args, Note: &record.Note{}}
//	ctx = record.WithNote(ctx, call.Note)
//	res, err := … // inner layers: record.NoteOf(ctx).Decided(d)
//	rec.Finish(ctx, call, session, res, answer.Detail(err), start, time.Since(start))
package record

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/metrics"
	"github.com/colibri-mcp/colibri-mcp/tools/answer"
)

// Recorder records calls; a nil Audit, Metrics or Bulk records (or lowers)
// nothing of its kind.
type Recorder struct {
	Audit *audit.Writer
	// Digester digests a call's arguments; nil: plain SHA-256.
	Digester *audit.Digester
	Metrics  *metrics.Metrics
	// Bulk is the face's table of large strings: the digest and the
	// result's size are of the strings in full.
	Bulk   *bulk.Table
	Logger *slog.Logger
	// Labels are a call's server and tool as metric labels: names a caller
	// made up are metrics.Other, so that it cannot grow the series.
	Labels func(ctx context.Context, server, tool string) (string, string)
}

func (r *Recorder) log() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

// Call is one call of a hosted tool, as its caller asked for it. (A read
// of an MCP Apps ui:// resource is recorded as a call whose Tool is the
// URI.)
type Call struct {
	Server, Tool string
	ExposedName  string // the tool's name in aggregate mode, when called so
	Args         json.RawMessage
	Note         *Note
	// Result, when set, is the result as the caller receives it, relayed
	// as the hosted server wrote it (serve --only's fast path): the audit
	// line's result_bytes are its length, not an encoding of res.
	Result json.RawMessage
}

// Finish writes a call's audit line, counts it and logs it. res is the
// hosted result (nil when colibri failed the call); detail is colibri's
// failure, when it failed it; session is the caller's (nil: the command
// line).
func (r *Recorder) Finish(ctx context.Context, call *Call, session mcp.Session, res *mcp.CallToolResult, detail *answer.ErrorDetail, start time.Time, took time.Duration) {
	outcome := audit.OK
	var kind failure.Kind
	switch {
	case detail != nil && detail.Kind == failure.KindDenied:
		outcome, kind = audit.Denied, detail.Kind
	case detail != nil && detail.Kind == failure.KindCancelled:
		outcome, kind = audit.Cancelled, detail.Kind
	case detail != nil:
		outcome, kind = audit.Error, detail.Kind
	case res != nil && res.IsError:
		outcome = audit.ToolError
	}
	server, tool := r.Labels(ctx, call.Server, call.Tool)
	r.Metrics.ToolCall(server, tool, outcome, string(kind))
	if outcome == audit.Denied {
		r.Metrics.PolicyDenial(server)
	}
	if kind == failure.KindToolChanged {
		r.Metrics.ToolChange(server)
	}
	r.log().DebugContext(ctx, "call", "server", call.Server, "tool", call.Tool, "outcome", outcome,
		"error_kind", kind, "duration_ms", took.Milliseconds())
	if r.Audit == nil {
		return
	}
	who := reqctx.Principal(ctx)
	rec := &audit.Record{
		TS:          start.UTC(),
		ID:          reqctx.ID(ctx),
		Principal:   who,
		Transport:   transportOf(who),
		Client:      clientOf(session),
		Server:      call.Server,
		Tool:        call.Tool,
		ExposedName: call.ExposedName,
		Outcome:     outcome,
		ErrorKind:   string(kind),
		DurationMS:  took.Milliseconds(),
	}
	digester := r.Digester
	if digester == nil {
		digester = audit.NewDigester(nil)
	}
	if flat, err := r.Bulk.Joined(call.Args); err == nil {
		args := digester.Digest(flat) // what the hosted server was sent
		rec.Args = &args
	} // else its large strings are gone (a refused call's): no digest of their references
	if d := call.Note.decision(); d != nil {
		rec.Policy = &audit.Policy{Decision: "allow", Rule: d.Rule}
		if !d.Allow {
			rec.Policy.Decision = "deny"
		}
	}
	rec.Pin = call.Note.pinState()
	if detail != nil {
		rec.Phase, rec.Attempts = string(detail.Phase), detail.Attempts
	}
	if res != nil && detail == nil && call.Result != nil {
		n := int64(r.Bulk.LoweredLen(call.Result))
		rec.ResultBytes = &n
	} else if res != nil && detail == nil {
		// What the caller receives, as JSON: encoded once more only when
		// there is an audit log to say it.
		if b, err := json.Marshal(res); err == nil {
			n := int64(r.Bulk.LoweredLen(b)) // its large strings in full
			rec.ResultBytes = &n
		}
	}
	if err := r.Audit.Write(rec); err != nil {
		r.log().ErrorContext(ctx, "audit record lost", "err", err)
		r.Metrics.AuditWriteError()
	}
}

// transportOf is how a principal's calls arrive: "stdio" (a session over
// stdio, or the command line) or "http".
func transportOf(who string) string {
	if who == reqctx.Stdio {
		return "stdio"
	}
	return "http"
}

func clientOf(session mcp.Session) *audit.Client {
	ss, ok := session.(*mcp.ServerSession)
	if !ok || ss == nil {
		return nil
	}
	init := ss.InitializeParams()
	if init == nil || init.ClientInfo == nil {
		return nil
	}
	return &audit.Client{Name: init.ClientInfo.Name, Version: init.ClientInfo.Version}
}
