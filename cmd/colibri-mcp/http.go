package main

import (
	"context"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/httpserve"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// shutdownWait bounds how long calls in flight may run after SIGTERM (HTTP)
// or after stdin ends (stdio).
const shutdownWait = 10 * time.Second

// maxMessage bounds one message a caller sends, over HTTP and stdio alike:
// a little above the largest hosted result, so that arguments as large as
// results pass. It saturates: a --max-result-bytes near the largest int64
// must not wrap to a negative bound, which go-sdk reads as "no limit".
func maxMessage(s *settings) int64 { return min(s.maxResultBytes, math.MaxInt64-1<<20) + 1<<20 }

// serveHTTP serves colibri's HTTP face (internal/httpserve) until ctx ends.
func serveHTTP(ctx context.Context, s *settings, svc *tools.Service) error {
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
	// Always: SIGHUP's default action ends the process at once, and
	// `service colibri_mcp reload` sends it with or without a token file.
	stop := reloadOnHUP(srv, s)
	defer stop()
	if err := srv.Serve(ctx); err != nil {
		return failed(err)
	}
	return nil
}

// reloadOnHUP re-reads the token file on SIGHUP. A file that fails to read
// keeps the tokens in force, and says so; without a token file there is
// nothing to reload, and colibri says that.
func reloadOnHUP(srv *httpserve.Server, s *settings) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				if s.tokenFile == "" {
					s.logger.Info("SIGHUP: no token file to reload (--token-file / COLIBRI_MCP_TOKEN_FILE is not set)")
				} else if err := srv.ReloadTokens(); err != nil {
					s.logger.Error("SIGHUP: token file not reloaded; the previous tokens stay in force", "err", err)
				} else {
					s.logger.Info("SIGHUP: token file reloaded", "path", s.tokenFile)
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
