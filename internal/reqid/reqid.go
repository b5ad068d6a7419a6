// Package reqid gives each request colibri serves an id, carried in its
// context, so that every log line about the request can be found by it
// (docs/operations.md#request-ids-and-trace-context: the audit line's "id" is the same).
//
//	ctx = reqid.With(ctx, reqid.New())
//	log := slog.New(reqid.Handler(inner)) // adds request_id from the context
//	log.InfoContext(ctx, "retrying")     // … request_id=3f9c2a7d41b0e6a5
package reqid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
)

// Key is the attribute's name in log lines.
const Key = "request_id"

// New is a fresh id: 16 hex digits, random (short to read, and a
// collision among the requests of one log is vanishingly unlikely).
func New() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}

type key struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From is the id ctx carries, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}

// Handler wraps h so that every record logged with a context that carries
// an id (the slog *Context methods) gets it as request_id.
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ slog.Handler }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	if id := From(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String(Key, id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler { return handler{h.Handler.WithAttrs(as)} }

func (h handler) WithGroup(name string) slog.Handler { return handler{h.Handler.WithGroup(name)} }
