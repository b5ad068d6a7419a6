package main

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
)

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
