// Package relist absorbs a hosted server's
// notifications/tools/list_changed so that a server cannot make colibri
// list it in a loop, or spend its CPU on the notifications themselves.
//
// A Gate stands in front of one session: the notifications that come while
// colibri's own tools/list of it is in flight say nothing new (that list is
// about to arrive), and once one has marked the list stale the rest until
// the next list add nothing either; each is counted against a bound per
// list. A Backoff spaces the re-lists of a server whose "changed" list keeps
// coming back the same.
//
//	g.Begin(); tools, err := list(); g.End()
//	// in the notification handler:
//	if g.Notify() { markStale() }
package relist

import (
	"sync"
	"time"
)

// MaxPerList is how many notifications a Gate counts between two lists
// before it reports the excess (Notify's caller may log it once).
const MaxPerList = 100

// Gate decides which notifications of one session act. The zero value is
// ready.
type Gate struct {
	mu       sync.Mutex
	inflight int  // colibri's own lists in flight
	stale    bool // a notification acted since the last list
	count    int  // notifications since the last list began
}

// Begin is called as colibri's own list of the session starts.
func (g *Gate) Begin() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight++
	g.stale, g.count = false, 0
}

// End is called when that list is over (read or failed).
func (g *Gate) End() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
}

// Notify counts one notification and reports whether it should act (mark
// the list stale): not while a list is in flight, and not again before the
// next list. over is true once, for the notification that passes
// MaxPerList since the last list.
func (g *Gate) Notify() (act, over bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.count++
	over = g.count == MaxPerList+1
	if g.inflight > 0 || g.stale {
		return false, over
	}
	g.stale = true
	return true, over
}

// Backoff is the wait before re-listing a server that said its list
// changed: First, doubled for each list in a row that came back the same,
// up to Max. The zero value waits First.
type Backoff struct {
	same int
}

// Bounds of Backoff.
const (
	First = time.Second
	Max   = 5 * time.Minute
)

// Delay is the wait before the next re-list.
func (b *Backoff) Delay() time.Duration {
	d := First
	for i := 0; i < b.same && d < Max; i++ {
		d *= 2
	}
	return min(d, Max)
}

// Listed records a list read after a change was announced: the same as
// before (the wait grows) or not (it starts again from First).
func (b *Backoff) Listed(same bool) {
	if same {
		b.same++
	} else {
		b.same = 0
	}
}
