// Package hup is what SIGHUP does to a serving colibri: a list of actions
// (the token file re-read, the audit log reopened for newsyslog), run off
// the signal loop one run at a time (internal/coalesce: an action that
// blocks cannot make the loop miss the next signal), each logged with its
// outcome; a failed one leaves the previous state in force.
//
//	stop := hup.Actions{{What: "token file reloaded", Do: srv.ReloadTokens}}.Watch(logger)
//	defer stop()
package hup

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/colibri-mcp/colibri-mcp/internal/coalesce"
)

// Actions are what SIGHUP does, in order.
type Actions []Action

// Action is one thing SIGHUP does; What names it in the log.
type Action struct {
	What string
	Do   func() error
}

// Watch runs the actions on each SIGHUP until the returned func is called.
// Without actions it does nothing: SIGHUP keeps its default.
func (a Actions) Watch(logger *slog.Logger) (stop func()) {
	if len(a) == 0 {
		return func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	// The actions run off the signal loop, one run at a time, and SIGHUPs
	// that come during a run make one more: an action that blocks cannot
	// make the loop miss the next signal.
	run := coalesce.New(func() {
		for _, act := range a {
			if err := act.Do(); err != nil {
				logger.Error("SIGHUP: "+act.What+" failed; the previous one stays in force", "err", err)
			} else {
				logger.Info("SIGHUP: " + act.What)
			}
		}
	})
	go func() {
		for {
			select {
			case <-ch:
				run.Kick()
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
