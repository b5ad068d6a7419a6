package httpserve

import (
	"context"
	"log/slog"
)

// QuietSessionIDs wraps a log handler so that a record below warn that
// carries a session id ("session_id", as go-sdk logs "server session
// connected") goes out at debug, or not at all: over HTTP a session id is
// the session's only credential besides the token, and info logs travel
// further than the service.
func QuietSessionIDs(h slog.Handler) slog.Handler { return quietSessions{h} }

type quietSessions struct{ slog.Handler }

func (q quietSessions) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn || r.Level <= slog.LevelDebug {
		return q.Handler.Handle(ctx, r)
	}
	carries := false
	r.Attrs(func(a slog.Attr) bool {
		carries = a.Key == "session_id"
		return !carries
	})
	if !carries {
		return q.Handler.Handle(ctx, r)
	}
	if !q.Handler.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	r.Level = slog.LevelDebug
	return q.Handler.Handle(ctx, r)
}

func (q quietSessions) WithAttrs(attrs []slog.Attr) slog.Handler {
	for _, a := range attrs {
		if a.Key == "session_id" {
			// Every record of this logger carries it: keep them all below info.
			return quietAll{q.Handler.WithAttrs(attrs)}
		}
	}
	return quietSessions{q.Handler.WithAttrs(attrs)}
}

func (q quietSessions) WithGroup(name string) slog.Handler {
	return quietSessions{q.Handler.WithGroup(name)}
}

// quietAll demotes every record below warn to debug.
type quietAll struct{ slog.Handler }

func (q quietAll) Enabled(ctx context.Context, l slog.Level) bool {
	if l < slog.LevelWarn {
		l = slog.LevelDebug
	}
	return q.Handler.Enabled(ctx, l)
}

func (q quietAll) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		r.Level = slog.LevelDebug
	}
	return q.Handler.Handle(ctx, r)
}

func (q quietAll) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietAll{q.Handler.WithAttrs(attrs)}
}

func (q quietAll) WithGroup(name string) slog.Handler { return quietAll{q.Handler.WithGroup(name)} }
