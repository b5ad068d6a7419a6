package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

var (
	errPhaseTimeout = errors.New("phase timed out")
	errCeiling      = errors.New("call ran past its ceiling of ten times call_timeout_ms")
	errCancelled    = errors.New("cancelled by the caller")
	errExited       = errors.New("the server exited with an error status")
)

func errOverloaded(n int) error {
	return fmt.Errorf("no process slot came free in time (%d hosted processes are alive)", n)
}

// phaseTimer is the deadline of one phase. kick pushes it d further on, as a
// progress notification does for a call, but never past the ceiling.
type phaseTimer struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	d      time.Duration

	mu      sync.Mutex
	timer   *time.Timer
	ceiling *time.Timer
	limit   time.Time
}

// newPhase starts a phase of d under parent. A ceiling > d allows kicks up to
// that long after the start.
func newPhase(parent context.Context, d, ceiling time.Duration) *phaseTimer {
	ctx, cancel := context.WithCancelCause(parent)
	t := &phaseTimer{ctx: ctx, cancel: cancel, d: d}
	t.timer = time.AfterFunc(d, func() { cancel(errPhaseTimeout) })
	if ceiling > d {
		t.limit = time.Now().Add(ceiling)
		t.ceiling = time.AfterFunc(ceiling, func() { cancel(errCeiling) })
	}
	return t
}

// kick restarts the phase's timeout, within the ceiling.
func (t *phaseTimer) kick() {
	if t.ceiling == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx.Err() == nil {
		t.timer.Reset(t.d)
	}
}

func (t *phaseTimer) stop() {
	t.timer.Stop()
	if t.ceiling != nil {
		t.ceiling.Stop()
	}
	t.cancel(context.Canceled)
}

// expired reports whether the phase ended by its own timeout or ceiling,
// rather than by the caller.
func (t *phaseTimer) expired() bool {
	c := context.Cause(t.ctx)
	return c == errPhaseTimeout || c == errCeiling
}
