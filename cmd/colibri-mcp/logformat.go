// newLogHandler is colibri's slog handler: text or JSON lines (to
// stderr, main's choice), a duration written as milliseconds under a key
// ending in _ms (as the audit log's duration_ms), the MCP SDK's info lines
// lowered to debug, and each line logged with a request's context carrying
// its request id (internal/reqid).
//
//	h, ok := newLogHandler("json", slog.LevelInfo, os.Stderr)
//	logger := slog.New(h)

package main

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
)

// newLogHandler is the handler for format ("text" or "json") at level, writing to w;
// false for another format.
func newLogHandler(format string, level slog.Level, w io.Writer) (slog.Handler, bool) {
	return newInstanceLogHandler(format, level, w, "")
}

// newInstanceLogHandler is newLogHandler whose every line ends with
// instance=NAME (serve's, for several instances sharing one log pipeline),
// unless instance is "".
func newInstanceLogHandler(format string, level slog.Level, w io.Writer, instance string) (slog.Handler, bool) {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: millis}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, false
	}
	if instance != "" {
		h = instanceLast{h, instance}
	}
	return reqctx.Handler(demoteSDK{h}), true
}

// instanceLast ends each record with instance=NAME, after the request id
// and every other attribute, so that lines keep the shape their readers
// match.
type instanceLast struct {
	slog.Handler
	name string
}

func (h instanceLast) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(slog.String("instance", h.name))
	return h.Handler.Handle(ctx, r)
}

func (h instanceLast) WithAttrs(as []slog.Attr) slog.Handler {
	return instanceLast{h.Handler.WithAttrs(as), h.name}
}

func (h instanceLast) WithGroup(name string) slog.Handler {
	return instanceLast{h.Handler.WithGroup(name), h.name}
}

// millis writes a duration as milliseconds, its key ending in _ms: JSON
// logs would give nanoseconds, text logs Go's "1.5s", and an operator's
// query wants one unit (the audit log's duration_ms).
func millis(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindDuration {
		return a
	}
	key := a.Key
	if !strings.HasSuffix(key, "_ms") {
		key += "_ms"
	}
	us := a.Value.Duration().Microseconds()
	if us%1000 == 0 {
		return slog.Int64(key, us/1000) // 1800000, not 1.8e+06
	}
	return slog.Float64(key, float64(us)/1000)
}

// sdkPackage is the MCP SDK's import path: the functions under it are the
// SDK's own.
const sdkPackage = "github.com/modelcontextprotocol/go-sdk/"

// demoteSDK passes records on, except that the MCP SDK's info lines
// ("server session connected", "session initialized", …) become debug: at
// the default level an editor's MCP log then shows colibri's lines, not the
// library's. The SDK is told by the record's call site, so that every logger
// handed to it (stdio server, HTTP handler) is covered by the one handler.
type demoteSDK struct{ slog.Handler }

func (h demoteSDK) Enabled(ctx context.Context, l slog.Level) bool {
	// The level of an SDK record is known to be lowered only in Handle.
	return h.Handler.Enabled(ctx, l)
}

func (h demoteSDK) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo && fromSDK(r.PC) {
		if !h.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h demoteSDK) WithAttrs(as []slog.Attr) slog.Handler {
	return demoteSDK{h.Handler.WithAttrs(as)}
}

func (h demoteSDK) WithGroup(name string) slog.Handler {
	return demoteSDK{h.Handler.WithGroup(name)}
}

func fromSDK(pc uintptr) bool {
	if pc == 0 {
		return false
	}
	f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	return strings.HasPrefix(f.Function, sdkPackage)
}
