package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
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
// SIGHUP runs onHUP, and re-reads the token file.
func serveHTTP(ctx context.Context, s *settings, svc *tools.Service, onHUP hupActions) error {
	server, err := newServer(ctx, s, svc)
	if err != nil {
		return err
	}
	s.metrics.SetSessions(func() (n int) {
		for range server.Sessions() {
			n++
		}
		return n
	})
	srv, err := httpserve.New(httpserve.Options{
		Addr:         s.httpAddr,
		Server:       server,
		AllowedHosts: s.allowedHosts,
		Ready: func() (bool, string) {
			reg, err := s.loadRegistry() // read now: the answer is the file as it is
			if ok, why := s.health.Ready(); !ok || err != nil {
				return ok, why
			}
			if s.only != "" && reg.Servers[s.only] == nil {
				// serve --only fails every request (config) while its
				// server is gone from the registry.
				return false, fmt.Sprintf("%s: no server %q, which serve --only offers", filepath.Base(s.configPath), s.only)
			}
			return true, ""
		},
		OnRefused:       s.metrics.HTTPRefused,
		TokenFile:       s.tokenFile,
		Logger:          s.logger,
		MaxBodyBytes:    maxMessage(s),
		SessionTimeout:  s.sessionTimeout,
		ShutdownTimeout: shutdownWait,
		Bulk:            s.bulk,
		Sealer:          s.sealer,
	})
	if err != nil {
		return usage(err)
	}
	if s.tokenFile != "" {
		onHUP = append(onHUP, hupAction{What: "token file reloaded (" + s.tokenFile + ")", Do: srv.ReloadTokens})
	}
	if len(onHUP) == 0 {
		// Caught all the same: SIGHUP's default action ends the process at
		// once, and `service colibri_mcp reload` sends it with or without a
		// token file.
		onHUP = append(onHUP, hupAction{What: "no token file to reload (--token-file / COLIBRI_MCP_TOKEN_FILE is not set)", Do: func() error { return nil }})
	}
	defer onHUP.Watch(s.logger)()
	if err := srv.Serve(ctx); err != nil {
		return failed(err)
	}
	return nil
}
