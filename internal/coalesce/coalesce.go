// Package coalesce runs a piece of work off the goroutine that asks for it,
// one run at a time, folding the requests that arrive during a run into one
// more run. A signal loop kicks it and goes straight back to its channel, so
// that work which blocks (a file that never opens) cannot make it miss the
// next signal.
//
//	r := coalesce.New(reload)
//	for range sighup { r.Kick() } // never blocks
package coalesce

import "sync"

// Runner runs f, on a goroutine of its own, after each Kick.
type Runner struct {
	f       func()
	mu      sync.Mutex
	running bool // a goroutine is running f, or about to
	again   bool // a Kick came during the run: run once more
}

// New returns a Runner of f.
func New(f func()) *Runner { return &Runner{f: f} }

// Kick asks for a run of f and returns at once. If f is running, one more
// run follows it, however many Kicks came meanwhile.
func (r *Runner) Kick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		r.again = true
		return
	}
	r.running = true
	go r.loop()
}

func (r *Runner) loop() {
	for {
		r.f()
		r.mu.Lock()
		if !r.again {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.again = false
		r.mu.Unlock()
	}
}
