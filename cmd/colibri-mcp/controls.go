package main

import (
	"context"
	"io"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/httpserve"
	"github.com/colibri-mcp/colibri-mcp/metrics"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// openAudit opens the audit log (--audit-log) and reads its key
// (--audit-key-file), into s. An audit log that was asked for and cannot
// be opened stops the run (exit 2): running unaudited would be the silent
// failure an audit log exists to prevent. The returned func closes it.
func openAudit(s *settings, stderr io.Writer) (closeAudit func(), err error) {
	w, d, warnings, err := audit.Setup(s.auditLog, s.auditKeyFile, stderr, audit.Options{
		Instance: s.instance,
		// Every 1,000 lines (and at exit) the chain's head is logged, so
		// that a copy of the log kept elsewhere anchors it against a
		// truncated tail (docs/operations.md).
		OnHead: func(h audit.Head) { logHead(s, h) },
	})
	for _, warning := range warnings {
		s.logger.Warn(warning)
	}
	if err != nil {
		return nil, usage(err)
	}
	if w == nil {
		return func() {}, nil
	}
	s.audit, s.digester = w, d
	return func() {
		if h := w.Head(); h.Lines > 0 {
			logHead(s, h)
		}
		w.Close()
	}, nil
}

// logHead logs the audit chain's head at info.
func logHead(s *settings, h audit.Head) {
	s.logger.Info("audit chain head", "chain", h.Chain, "lines", h.Lines, "last", h.Last, "audit_log", s.auditLog)
}

// startMetrics serves the metrics at --metrics-addr until ctx ends, and
// returns the server (for SIGHUP's token reload) and a func that waits for
// it to stop.
func startMetrics(ctx context.Context, s *settings, h *host.Host) (*httpserve.MetricsServer, func(), error) {
	load := (&registry.Loader{Path: s.configPath}).Load
	s.metrics.SetState(func() metrics.State { return hostState(load, h) })
	ms, err := httpserve.NewMetrics(httpserve.MetricsOptions{
		Addr:         s.metricsAddr,
		Handler:      s.metrics.Handler(),
		TokenFile:    s.tokenFile,
		Logger:       s.logger,
		AllowedHosts: s.allowedHosts,
	})
	if err != nil {
		return nil, nil, usage(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := ms.Serve(ctx); err != nil {
			s.logger.Error("metrics stopped", "err", err)
		}
	}()
	return ms, func() { <-done }, nil
}

// hostState is what the metrics' gauges show: the host's view of every
// server of the registry as it is now.
func hostState(load func() (*registry.Registry, error), h *host.Host) metrics.State {
	st := metrics.State{Processes: h.Processes()}
	reg, err := load()
	if err != nil {
		return st
	}
	for _, name := range reg.Names() {
		hs := h.Status(name)
		ss := metrics.ServerState{Server: name, Warm: hs.Warm, CircuitOpen: hs.CircuitOpen}
		if reg.Servers[name].Spare > 0 {
			ss.Spares = &metrics.SpareState{Ready: hs.Spare.Ready, Hits: hs.Spare.Hits, Misses: hs.Spare.Misses}
		}
		if hs.Tried {
			up := hs.Up
			ss.Up = &up
		}
		st.Servers = append(st.Servers, ss)
	}
	return st
}
