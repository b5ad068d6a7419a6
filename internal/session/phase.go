package session

import (
	"context"
	"errors"
	"sync"
	"time"
)

var (
	// ErrPhaseTimeout is the cause of a Timer's context that ran out.
	ErrPhaseTimeout = errors.New("phase timed out")
	errCeiling      = errors.New("call ran past its ceiling of ten times call_timeout_ms")
	// ErrCancelled is the error of a request whose caller gave up.
	ErrCancelled = errors.New("cancelled by the caller")
	errExited    = errors.New("the server exited with an error status")
)

// Timer is the deadline of one phase. kick pushes it d further on, as a
// progress notification does for a call, but never past the ceiling.
type Timer struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	d      time.Duration

	mu      sync.Mutex
	timer   *time.Timer
	ceiling *time.Timer
	limit   time.Time
}

// NewTimer starts a phase of d under parent. A ceiling > d allows kicks up to
// that long after the start.
func NewTimer(parent context.Context, d, ceiling time.Duration) *Timer {
	ctx, cancel := context.WithCancelCause(parent)
	t := &Timer{ctx: ctx, cancel: cancel, d: d}
	t.timer = time.AfterFunc(d, func() { cancel(ErrPhaseTimeout) })
	if ceiling > d {
		t.limit = time.Now().Add(ceiling)
		t.ceiling = time.AfterFunc(ceiling, func() { cancel(errCeiling) })
	}
	return t
}

// kick restarts the phase's timeout, within the ceiling.
func (t *Timer) kick() {
	if t.ceiling == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx.Err() == nil {
		t.timer.Reset(t.d)
	}
}

func (t *Timer) Stop() {
	t.timer.Stop()
	if t.ceiling != nil {
		t.ceiling.Stop()
	}
	t.cancel(context.Canceled)
}

// Context is the phase's context: it ends at the timeout, the ceiling, or
// with its parent.
func (t *Timer) Context() context.Context { return t.ctx }

// Expired reports whether the phase ended by its own timeout or ceiling,
// rather than by the caller.
func (t *Timer) Expired() bool {
	c := context.Cause(t.ctx)
	return c == ErrPhaseTimeout || c == errCeiling
}
