// A coalescer runs a piece of work off the goroutine that asks for it,
// one run at a time, folding the requests that arrive during a run into one
// more run. A signal loop kicks it and goes straight back to its channel, so
// that work which blocks (a file that never opens) cannot make it miss the
// next signal.
//
//	r := newCoalescer(reload)
//	for range sighup { r.Kick() } // never blocks

package main

import "sync"

// coalescer runs f, on a goroutine of its own, after each Kick.
type coalescer struct {
	f       func()
	mu      sync.Mutex
	running bool // a goroutine is running f, or about to
	again   bool // a Kick came during the run: run once more
}

// newCoalescer returns a coalescer of f.
func newCoalescer(f func()) *coalescer { return &coalescer{f: f} }

// Kick asks for a run of f and returns at once. If f is running, one more
// run follows it, however many Kicks came meanwhile.
func (r *coalescer) Kick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		r.again = true
		return
	}
	r.running = true
	go r.loop()
}

func (r *coalescer) loop() {
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
