// hupActions are what SIGHUP does to a serving colibri: a list of actions
// (the token file re-read, the audit log reopened for newsyslog), run off
// the signal loop one run at a time (coalesce.go: an action that
// blocks cannot make the loop miss the next signal), each logged with its
// outcome; a failed one leaves the previous state in force.
//
//	stop := hupActions{{What: "token file reloaded", Do: srv.ReloadTokens}}.Watch(logger)
//	defer stop()

package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// hupActions are what SIGHUP does, in order.
type hupActions []hupAction

// hupAction is one thing SIGHUP does; What names it in the log.
type hupAction struct {
	What string
	Do   func() error
}

// Watch runs the actions on each SIGHUP until the returned func is called.
// Without actions it does nothing: SIGHUP keeps its default.
func (a hupActions) Watch(logger *slog.Logger) (stop func()) {
	if len(a) == 0 {
		return func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	// The actions run off the signal loop, one run at a time, and SIGHUPs
	// that come during a run make one more: an action that blocks cannot
	// make the loop miss the next signal.
	run := newCoalescer(func() {
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
