package reqctx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
)

// IDKey is the attribute's name in log lines.
const IDKey = "request_id"

// NewID is a fresh id: 16 hex digits, random (short to read, and a
// collision among the requests of one log is vanishingly unlikely).
func NewID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}

type idKey struct{}

// WithID returns ctx carrying id.
func WithID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, idKey{}, id)
}

// ID is the id ctx carries, or "".
func ID(ctx context.Context) string {
	id, _ := ctx.Value(idKey{}).(string)
	return id
}

// Handler wraps h so that every record logged with a context that carries
// an id (the slog *Context methods) gets it as request_id.
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ slog.Handler }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	if id := ID(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String(IDKey, id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler { return handler{h.Handler.WithAttrs(as)} }

func (h handler) WithGroup(name string) slog.Handler { return handler{h.Handler.WithGroup(name)} }
