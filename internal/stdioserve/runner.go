package stdioserve

import (
	"context"
	"time"
)

// runner runs the calls Transport.Calls took, each on a goroutine that
// stays a moment for the next. A warm call's goroutine grows its stack
// through colibri's middlewares and the schema check to 16 KiB and more: a
// goroutine started afresh for each call copied its stack three times over,
// about a tenth of what serve --only's fast path spends on a warm call
// (docs/benchmarks.md, "The serve --only hop"). A call still never waits
// for another: with no goroutine idle, a new one starts.
type runner struct {
	jobs chan func() // unbuffered: a send is taken by an idle goroutine, or not at all
	done <-chan struct{}
	idle time.Duration // how long a goroutine waits for the next call before it ends
}

// idleFor is runner.idle: a few seconds keeps a goroutine for a caller's
// next call, and none for a session that has gone quiet.
const idleFor = 5 * time.Second

// newRunner's goroutines end with ctx.
func newRunner(ctx context.Context) *runner {
	return &runner{jobs: make(chan func()), done: ctx.Done(), idle: idleFor}
}

// run runs job on an idle goroutine, or on a new one.
func (r *runner) run(job func()) {
	select {
	case r.jobs <- job:
	default:
		go r.work(job)
	}
}

// work runs job, then what run hands it, until it has been idle for
// r.idle or the session's context ends.
func (r *runner) work(job func()) {
	idle := time.NewTimer(r.idle)
	defer idle.Stop()
	for {
		job()
		job = nil // what it held is not kept while idle
		idle.Reset(r.idle)
		select {
		case job = <-r.jobs:
		case <-idle.C:
			return
		case <-r.done:
			return
		}
	}
}
