package main

import (
	"context"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/httpserve"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// shutdownWait bounds how long calls in flight may run after SIGTERM (HTTP)
// or after stdin ends (stdio).
const shutdownWait = 10 * time.Second

// maxMessage bounds one message a caller sends, over HTTP and stdio alike:
// a little above the largest hosted result, so that arguments as large as
// results pass.
func maxMessage(s *settings) int64 { return s.maxResultBytes + 1<<20 }

// serveHTTP serves colibri's HTTP face (internal/httpserve) until ctx ends.
// SIGHUP runs hup, and re-reads the token file.
func serveHTTP(ctx context.Context, s *settings, svc *tools.Service, hup onHUP) error {
	srv, err := httpserve.New(httpserve.Options{
		Addr:            s.httpAddr,
		Server:          svc.NewServer(version),
		TokenFile:       s.tokenFile,
		Logger:          s.logger,
		MaxBodyBytes:    maxMessage(s),
		SessionTimeout:  s.sessionTimeout,
		ShutdownTimeout: shutdownWait,
	})
	if err != nil {
		return usage(err)
	}
	if s.tokenFile != "" {
		hup = append(hup, hupAction{"token file reloaded (" + s.tokenFile + ")", srv.ReloadTokens})
	}
	defer hup.watch(s)()
	if err := srv.Serve(ctx); err != nil {
		return failed(err)
	}
	return nil
}
